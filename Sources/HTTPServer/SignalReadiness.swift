import Glibc

/// Waits until the process can take SIGTERM gracefully. swift-service-lifecycle ignores the signal
/// and lets libdispatch receive it through a `signalfd`, registered asynchronously after the
/// service group starts; a SIGTERM before that would be lost (or kill the process). Announcing
/// "listening" only afterwards makes "SIGTERM → graceful exit 0" hold from the first moment.
///
/// ```swift
/// tasks.addTask { try await serviceGroup.run() }
/// tasks.addTask { await SignalReadiness.wait(); print("listening on …") }
/// ```
public enum SignalReadiness {
    /// Returns once a signalfd exists in this process, or after `seconds`.
    public static func wait(seconds: Double = 10) async {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        while clock.now < deadline, !hasSignalDescriptor() {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    public static func hasSignalDescriptor() -> Bool {
        guard let directory = opendir("/proc/self/fd") else { return true }
        defer { closedir(directory) }
        var target = [CChar](repeating: 0, count: 256)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            let length = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
            guard length > 0 else { continue }
            let link = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if link.contains("signalfd") { return true }
        }
        return false
    }
}
