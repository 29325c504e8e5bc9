//! Application profiles (sensitivity vectors).
