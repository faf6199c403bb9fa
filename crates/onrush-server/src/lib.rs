//! onrush-server
