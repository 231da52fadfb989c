import Synchronization

/// Makes the tokens that name staged versions (``ScopeHandle/Runtime/StagedVersion/token``): an
/// append names the token of the version it was built on, and the store refuses it unless that
/// is still its scope's head.
///
/// A token only has to differ from every other token the store may hold as a head. A count from
/// a random start does that: no two tokens of one process are equal (random draws may collide),
/// and two processes sharing a store start far apart. It is also what a write can afford: a
/// random draw per change set asked the kernel for entropy each time.
enum LineageToken {
    /// This process's next token. Tokens stay in `1...(UInt64.max >> 1)` (a PostgreSQL `bigint`,
    /// below the untokened heads an SQLite writer counts from `1 << 63`): the start is below
    /// `1 << 62`, and no process makes `1 << 62` versions.
    private static let counter = Atomic<UInt64>(UInt64.random(in: 1...(UInt64.max >> 2)))

    static func next() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
