//! Queueing model of memory controllers (NuPoCo §3.3, §4).
