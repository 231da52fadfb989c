import Store

/// Where a subscriber starts: the parsed `Last-Event-ID` (or `?lastEventId=`).
///
/// ```swift
/// ResumePoint(lastEventID: "42")   // .after(42)
/// ResumePoint(lastEventID: nil)    // .fresh
/// ```
public enum ResumePoint: Sendable, Equatable {
    /// No resume point: the full state first (`snapshot`).
    case fresh
    /// Resume after this version.
    case after(Int)
    /// A resume point that names no version of ours: the full state (`reset`).
    case unknown

    public init(lastEventID: String?) {
        let text = lastEventID.map { $0.filter { $0 != " " && $0 != "\t" } } ?? ""
        guard !text.isEmpty else {
            self = .fresh
            return
        }
        guard let version = Int(text), version >= 0 else {
            self = .unknown
            return
        }
        self = .after(version)
    }
}

/// Exact resume: what a subscriber starting at a ``ResumePoint`` gets before live events — the
/// change sets after its point, exactly once and in order, or the full state in band (`snapshot`,
/// or `reset` when the point cannot be served exactly: too old, ahead of us, or from a deleted and
/// re-created scope). Pure decisions over the scope's runtime; ``ScopeEngine/subscribe(_:to:from:)``
/// carries them out under the scope's lock.
enum ScopeResume {
    /// The first decision, from memory.
    enum Plan: Equatable {
        /// Up to date: live events only.
        case live
        /// These buffered change sets, then live.
        case buffered(versions: ClosedRange<Int>)
        /// Part of the way is no longer in memory: read the store after this version first.
        case readStore(after: Int)
        /// The full state first, as `snapshot` (fresh) or `reset` (the point cannot be served).
        case state(ScopeEvent.Kind)
    }

    static func plan(
        _ point: ResumePoint, committed: Int, oldestResumable: Int, recent: RecentChangeSets
    ) -> Plan {
        switch point {
        case .fresh:
            return .state(.snapshot)
        case .after(let version) where version == committed:
            return .live
        case .after(let version) where version < committed && version >= oldestResumable:
            return recent.holdsAll(after: version)
                ? .buffered(versions: (version + 1)...committed) : .readStore(after: version)
        case .after, .unknown:
            return .state(.reset)
        }
    }

    /// The decision once the store was read: `records` are the change sets read after `version`.
    enum Join: Equatable {
        /// The records, then the buffered versions in `tail` (may be empty), then live.
        case records(tail: ClosedRange<Int>?)
        /// The buffer moved past what was read (many change sets meanwhile): read again.
        case readAgain
        case reset
    }

    static func join(
        records: [ChangeRecord], after version: Int, committed: Int, recent: RecentChangeSets, attemptsLeft: Int
    ) -> Join {
        let contiguous = records.enumerated().allSatisfy { Int($1.version) == version + 1 + $0 }
        let lastRead = records.last.map { Int($0.version) } ?? version
        guard contiguous else { return .reset }
        if lastRead == committed { return .records(tail: nil) }
        if lastRead < committed, recent.holdsAll(after: lastRead) { return .records(tail: (lastRead + 1)...committed) }
        if lastRead < committed, attemptsLeft > 1 { return .readAgain }
        return .reset
    }
}
