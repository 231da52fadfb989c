import Glibc

/// Waits until the process takes SIGTERM and SIGINT gracefully. swift-service-lifecycle sets the
/// signals to ignored and has libdispatch install its handlers shortly after the service group
/// starts; a signal sent before that would be lost or kill the process. Announcing "listening"
/// only once both signals show as caught in `/proc/self/status` makes "SIGTERM → graceful exit"
/// hold from the first moment.
///
/// ```swift
/// tasks.addTask { try await serviceGroup.run() }
/// tasks.addTask { await SignalReadiness.wait(); print("listening on …") }
/// ```
public enum SignalReadiness {
    /// Returns once SIGTERM and SIGINT are caught by a handler in this process, or after `seconds`.
    public static func wait(seconds: Double = 10) async {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        while clock.now < deadline, !signalsAreCaught() {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Whether SIGTERM and SIGINT both have a handler installed (the `SigCgt` mask of
    /// `/proc/self/status`); true where that file cannot be read.
    public static func signalsAreCaught(_ signals: [Int32] = [SIGTERM, SIGINT]) -> Bool {
        guard let file = fopen("/proc/self/status", "r") else { return true }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("SigCgt:") else { continue }
            let hex = text.dropFirst("SigCgt:".count).filter { $0.isHexDigit }
            guard let mask = UInt64(hex, radix: 16) else { return true }
            return signals.allSatisfy { mask & (1 << UInt64($0 - 1)) != 0 }
        }
        return true
    }
}
