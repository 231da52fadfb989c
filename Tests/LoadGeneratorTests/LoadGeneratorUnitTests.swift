import Glibc
import SocketLoop
import Testing

@testable import LoadGenerator

/// Target parsing, source addresses, the version scanner, latency summaries and report pieces.
@Suite("LoadGenerator units")
struct LoadGeneratorUnitTests {
    @Test("a loopback URL parses; a trailing slash is fine; other schemes and paths are refused")
    func targets() throws {
        let target = try BenchTarget(url: "http://127.0.0.1:8080/")
        #expect(target.port == 8080)
        #expect(target.isLoopback)
        #expect(target.authority == "127.0.0.1:8080")
        #expect(try BenchTarget(url: "http://localhost:9").isLoopback)
        #expect(try BenchTarget(url: "http://127.0.0.7").port == 80)
        let remote = try BenchTarget(url: "http://10.1.2.3:80")
        #expect(!remote.isLoopback)
        for bad in [
            "https://127.0.0.1:8080", "127.0.0.1:8080", "http://127.0.0.1:0", "http://127.0.0.1:8080/v1", "http://:80",
        ] {
            #expect(throws: BenchTarget.Failure.self) { try BenchTarget(url: bad) }
        }
    }

    @Test("source addresses rotate over 127.0.0.1…N; one means the kernel's choice")
    func sourceAddresses() {
        #expect(SourceAddresses(count: 1).address(for: 5) == nil)
        let four = SourceAddresses(count: 4)
        let names = (0..<6).map { four.name(for: $0) }
        #expect(names == ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.1", "127.0.0.2"])
        #expect(four.address(for: 2) != nil)
    }

    @Test("the change-set answer's version is found without a full parse")
    func versionScanner() {
        #expect(ResponseVersionScanner.version(in: Array(#"{"version":42,"fragmentReplies":[{}]}"#.utf8)) == 42)
        #expect(ResponseVersionScanner.version(in: Array(#"{"x":{"version": 7}}"#.utf8)) == 7)
        #expect(ResponseVersionScanner.version(in: Array(#"{"type":"/problems/x"}"#.utf8)) == nil)
        #expect(ResponseVersionScanner.version(in: Array(#"{"version":"a"}"#.utf8)) == nil)
    }

    @Test("latency percentiles come from the recorded values, in milliseconds")
    func latency() {
        var summary = LatencySummary()
        for millisecond in 1...100 { summary.record(nanoseconds: UInt64(millisecond) * 1_000_000) }
        var other = LatencySummary()
        other.record(nanoseconds: 1_000_000_000)
        summary.merge(other)
        #expect(summary.count == 101)
        #expect(abs(summary.milliseconds(atPercentile: 50) - 51) < 0.1)
        #expect(abs(summary.maxMilliseconds - 1000) < 1)
        #expect(summary.report.map(\.key) == ["p50", "p90", "p99", "p999", "max", "mean"])
        #expect(LatencySummary().milliseconds(atPercentile: 99) == 0)
    }

    @Test("numbers are grouped and fixed for the table")
    func formatting() {
        #expect(ReportFormatting.grouped(1_234_567) == "1,234,567")
        #expect(ReportFormatting.grouped(999) == "999")
        #expect(ReportFormatting.fixed(2.5, 2) == "2.50")
        #expect(ReportFormatting.fixed(99.96, 1) == "100.0")
        #expect(ReportFormatting.fixed(200, 0) == "200")
    }

    @Test("the descriptor limit is raised to the hard limit")
    func descriptorLimit() {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let raised = FileDescriptorLimit.raiseToHardLimit()
        let hard = limit.rlim_max > rlim_t(Int.max) ? Int.max : Int(limit.rlim_max)
        #expect(raised == hard)
    }
}
