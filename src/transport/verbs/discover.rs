//! Which RDMA devices and ports this host has, from sysfs.
