import Foundation
import Glibc

/// Progress on stderr: rewritten in place on a terminal, one line per report otherwise.
enum BenchOutput {
    @Sendable static func progress(_ line: String) {
        if isatty(STDERR_FILENO) == 1 {
            FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
        } else {
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    /// Ends an in-place progress line before the result is printed.
    static func endProgress() {
        if isatty(STDERR_FILENO) == 1 { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("jetstream bench: \(message)\n".utf8))
    }
}
