fn main() {
    std::process::exit(vramdoc::cli::main());
}
