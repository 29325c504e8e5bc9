//! One module per subcommand.

pub mod bench;
pub mod calibrate;
pub mod calibrate_sim;
pub mod compare;
pub mod demo;
pub mod fresh;
pub mod gen;
pub mod knowledge;
pub mod list;
pub mod mixes;
pub mod profile;
pub mod profiles;
pub mod report;
pub mod run;
pub mod service;
pub mod sim;
pub mod sim_search;
pub mod solo;
pub mod topo;
pub mod why;
