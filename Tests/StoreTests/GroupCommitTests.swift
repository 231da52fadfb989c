import Dispatch
import Store
import Synchronization
import Testing

@Suite struct GroupCommitTests {
    @Test func appendsQueuedWhileTheCommitThreadIsHeldShareOneTransaction() async throws {
        try await withSQLiteStore { store, _ in
            let writers = 32
            for index in 0..<writers { _ = try await store.createScope(descriptor("w\(index)"), snapshot: []) }
            let before = store.statistics
            let results = ResultCollector()
            store.pauseCommits()
            runOnThreads(writers) { index in
                store.append(AppendRequest(scope: "w\(index)", version: 1, payload: payload("w\(index)", 1))) {
                    results.add("w\(index)", $0)
                }
            }
            #expect(store.pendingOperationCount == writers)
            #expect(results.count == 0)
            store.resumeCommits()
            #expect(waitUntil { results.count == writers })
            #expect(results.failures.isEmpty)
            let after = store.statistics
            #expect(after.committedTransactions == before.committedTransactions + 1)
            #expect(after.committedOperations == before.committedOperations + writers)
            #expect(after.largestBatch == writers)
            for index in 0..<writers { #expect(try store.scope(named: "w\(index)")?.version == 1) }
        }
    }

    @Test func manyThreadsPipeliningIntoFewScopesLandWithContiguousVersions() async throws {
        try await withSQLiteStore { store, _ in
            let scopes = 8
            let threadsPerScope = 4
            let appendsPerThread = 25
            for index in 0..<scopes { _ = try await store.createScope(descriptor("s\(index)"), snapshot: []) }
            let sequencer = ScopeSequencer()
            let failures = Mutex<[StoreError]>([])
            runOnThreads(scopes * threadsPerScope) { thread in
                let scope = "s\(thread % scopes)"
                for _ in 0..<appendsPerThread {
                    let done = DispatchSemaphore(value: 0)
                    // Like the gateway's ScopeEngine: pick the version and enqueue under the scope's lock, wait outside.
                    sequencer.next(scope) { version in
                        store.append(AppendRequest(scope: scope, version: version, payload: payload(scope, version))) {
                            if case .failure(let error) = $0 { failures.withLock { $0.append(error) } }
                            done.signal()
                        }
                    }
                    done.wait()
                }
            }
            #expect(failures.withLock { $0 }.isEmpty)
            let expected = Int64(threadsPerScope * appendsPerThread)
            for index in 0..<scopes {
                let scope = "s\(index)"
                let page = try store.changes(scope: scope, after: 0, limit: 1000)
                #expect(page.currentVersion == expected)
                #expect(page.records == (1...expected).map { ChangeRecord(version: $0, payload: payload(scope, $0)) })
            }
            #expect(store.statistics.committedOperations >= scopes * threadsPerScope * appendsPerThread)
        }
    }
}
