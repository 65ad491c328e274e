fn main() {
    std::process::exit(elench::cli::run());
}
