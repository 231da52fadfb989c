import Synchronization

/// A compiled `pattern`. `Regex<AnyRegexOutput>` is not Sendable (it may lower its program lazily),
/// so matches from several threads take a lock; patterns are rare and matches short.
final class CompiledPattern: Sendable {
    private let regex: Mutex<Regex<AnyRegexOutput>>

    init?(_ pattern: String) {
        guard let regex = try? Regex(pattern) else { return nil }
        self.regex = Mutex(regex)
    }

    func matchesWhole(_ string: String) -> Bool {
        regex.withLock { regex in (try? regex.wholeMatch(in: string)) != nil }
    }
}
