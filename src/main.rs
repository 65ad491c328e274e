// Commands that walk large closures (blast, gate, fsck) allocate and free many small values;
// mimalloc keeps that from dominating their time (glibc's allocator did, measured).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(elench::cli::run());
}
