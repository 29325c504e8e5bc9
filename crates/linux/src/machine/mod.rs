//! The LinuxMachine backend.
