//! hwloc XML topologies.
