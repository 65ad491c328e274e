//! Every integration test, in one binary: one link instead of one per file, and one set of
//! helpers (`common` drives the CLI with key files, `support_envelopes` signs in memory and
//! reads the library, `check_support` builds trees for `check`). Run one file's tests with
//! `cargo test --test it <file>::`.

mod check_support;
mod common;
mod support_envelopes;

mod agent_spec;
mod agent_spec_level2;
mod anchor_props;
mod architecture;
mod blast_store;
mod check_confinement;
mod check_runners;
mod ci_recipe;
mod claim_text;
mod cli_anchor;
mod cli_blast;
mod cli_check;
mod cli_claim;
mod cli_edges;
mod cli_gate;
mod cli_graph;
mod cli_hardening;
mod cli_junit;
mod cli_sarif;
mod cli_scenarios;
mod cli_surface;
mod cli_sync;
mod cli_verify;
mod conformance;
mod crash;
mod demo;
mod docs;
mod durability;
mod environments;
mod fold_props;
mod id_props;
mod index_cache;
mod mcp;
mod ops_read;
mod ops_write;
mod predicate_parser;
mod predicate_props;
mod standards;
mod store_fds;
mod store_log;
mod tree_git;
