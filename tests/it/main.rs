//! Every integration test, in one binary: one link instead of one per file, and one set of
//! helpers (`common`: keys, claims, envelopes signed in memory or through the CLI, stores,
//! the runner; `check_support` builds trees for `check` on top of it). Run one file's tests
//! with `cargo test --test it <file>::`.

mod check_support;
mod common;

mod agent_spec;
mod agent_spec_level2;
mod anchor_props;
mod architecture;
mod blast_store;
mod check_confinement;
mod check_runners;
mod check_scratch;
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
mod cli_output;
mod cli_rewind;
mod cli_sarif;
mod cli_scenarios;
mod cli_signer;
mod cli_surface;
mod cli_sync;
mod cli_trust;
mod cli_trust_gaps;
mod cli_verify;
mod compromise_props;
mod conformance;
mod crash;
mod demo;
mod docs;
mod durability;
mod early_exit;

mod environments;
mod fold_props;
mod fold_quick_props;
mod gate_fast_props;
mod id_props;
mod index_cache;
mod index_damage;
mod mcp;
mod ops_read;
mod ops_write;
mod predicate_parser;
mod predicate_props;
mod resolve_handed_props;
mod standards;
mod store_fds;
mod store_log;
mod tlog_witness;
mod tree_git;
mod trust_rotation;
mod verdicts_per_tree;
mod verdicts_props;
mod witness_cli;
mod witness_client;
