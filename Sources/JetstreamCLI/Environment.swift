#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads option defaults from `JETSTREAM_*` environment variables, so every flag of
/// `jetstream serve` can also be set from the environment (flags win).
///
/// ```swift
/// @Option var port: Int = Environment.value("JETSTREAM_PORT", default: 8080)
/// ```
enum Environment {
    static func string(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    static func value<T: LosslessStringConvertible>(_ name: String, default fallback: T) -> T {
        guard let text = string(name) else { return fallback }
        guard let parsed = T(text) else {
            // A typo in a deployment's environment must not be silently replaced by a default.
            fputs("jetstream: environment variable \(name)=\(text) is not a valid \(T.self)\n", stderr)
            exit(64)
        }
        return parsed
    }

    static func optional(_ name: String) -> String? { string(name) }
}
