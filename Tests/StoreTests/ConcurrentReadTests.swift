import Dispatch
import Store
import Synchronization
import Testing

@Suite struct ConcurrentReadTests {
    @Test func readersRunningDuringAppendsAlwaysSeeAConsistentPrefix() async throws {
        var configuration = SQLiteStore.Configuration()
        configuration.readerConnections = 3
        try await withStore(configuration: configuration) { store, _ in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            let appends: Int64 = 200
            let problems = Mutex<[String]>([])
            let writerDone = Atomic<Bool>(false)
            runOnThreads(9) { thread in
                if thread == 0 {
                    for version in 1...appends {
                        let done = DispatchSemaphore(value: 0)
                        store.append(AppendRequest(scope: "a", version: version, payload: payload("a", version))) {
                            if case .failure(let error) = $0 { problems.withLock { $0.append("append: \(error)") } }
                            done.signal()
                        }
                        done.wait()
                    }
                    writerDone.store(true, ordering: .releasing)
                    return
                }
                // Bounded: each reader stops at the writer's end or after 5000 reads.
                for _ in 0..<5000 where !writerDone.load(ordering: .acquiring) {
                    do {
                        let page = try store.changes(scope: "a", after: 0, limit: 1000)
                        let versions = page.records.map(\.version)
                        let expected = page.currentVersion == 0 ? [] : Array(1...page.currentVersion)
                        if versions != expected {
                            problems.withLock { $0.append("page \(versions.count) vs version \(page.currentVersion)") }
                        }
                    } catch {
                        problems.withLock { $0.append("read: \(error)") }
                    }
                }
            }
            #expect(problems.withLock { $0 }.isEmpty)
            #expect(try store.scope(named: "a")?.version == appends)
        }
    }
}
