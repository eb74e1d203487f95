//! The default templates, locale bundles and static files, compiled into the binary by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
