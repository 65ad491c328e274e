//! The `elench` binary: the two front ends over the library, the command line (`cli`) and
//! the MCP server (`mcp`). They live here rather than in the library, so that a program that
//! uses the library builds without clap, rmcp or tokio, and the compiler reports front-end
//! code nothing calls.

mod cli;
mod mcp;

// Commands that walk large closures (blast, gate, fsck) allocate and free many small values;
// mimalloc keeps that from dominating their time (glibc's allocator did, measured).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// SIGINT and SIGTERM are recorded from elench's first instruction on (the pre-initialisation
// array runs before every other initialiser and `main`), so that a stop in its first
// milliseconds is answered in JSON like any other (see `cli::interrupt`).
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".preinit_array"]
static CATCH_SIGNALS_BEFORE_MAIN: extern "C" fn() = cli::interrupt::catch_before_main;

fn main() {
    std::process::exit(cli::run());
}
