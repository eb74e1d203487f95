/// mimalloc: a build allocates and frees hundreds of thousands of small strings and maps; the
/// system allocator returns that memory to the kernel between phases and pays page faults to get
/// it back (a third of a no-change rebuild of a large site went to the allocator and page faults).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(vramdoc::cli::main());
}
