import Testing

@testable import ScopeEngine

/// Lineage tokens name staged versions; the store refuses an append whose parent token is not
/// its scope's head, so no two tokens of a process may be equal, and each must fit a PostgreSQL
/// `bigint` below the untokened heads (`1 << 63` on).
@Suite struct LineageTokenTests {
    @Test("tokens never repeat and stay positive below 1 << 63, from threads at once")
    func distinctAndInRange() async {
        let batches = await withTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<4 { group.addTask { (0..<5_000).map { _ in LineageToken.next() } } }
            return await group.reduce(into: [[UInt64]]()) { $0.append($1) }
        }
        let tokens = batches.flatMap { $0 }
        #expect(Set(tokens).count == tokens.count)
        #expect(tokens.allSatisfy { $0 >= 1 && $0 <= UInt64.max >> 1 })
        for batch in batches { #expect(batch == batch.sorted(), "each thread sees them rise") }
    }
}
