//! onrush-plan
