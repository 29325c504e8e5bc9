//! The OpenMP DoP channel.
