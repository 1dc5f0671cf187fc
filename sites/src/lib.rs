//! skillshift-sites.
