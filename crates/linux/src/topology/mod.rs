//! Topology from sysfs.
