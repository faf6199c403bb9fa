//! onrush-http1
