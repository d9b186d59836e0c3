fn main() {
    for w in sim::bench::workloads() {
        let r = sim::bench::run(&w, 1000);
        println!(
            "{}: {} req in {:.3}s wall, {:.0} req/s, peak {:?}",
            r.name,
            r.requests,
            r.wall_secs,
            r.rate(),
            sim::bench::peak_rss_bytes()
        );
    }
}
