//! onrush-metrics
