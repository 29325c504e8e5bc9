//! `coloc`: the command-line front end.

fn main() {}
