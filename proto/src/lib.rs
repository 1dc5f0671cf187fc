//! The `.proto` files in `proto/` and their generated tonic code; nothing else.
