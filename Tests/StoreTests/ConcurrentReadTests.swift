import Store
import Synchronization
import Testing

@Suite struct ConcurrentReadTests {
    /// What the writer and the readers share (child tasks cannot capture a local `Mutex`).
    private final class Race: Sendable {
        let problems = Mutex<[String]>([])
        let writerDone = Atomic<Bool>(false)
        let pagesRead = Atomic<Int>(0)
    }

    /// One writer appends 200 versions one after another while 8 readers read the whole log over and
    /// over: every page is exactly the versions up to the version read with it.
    @Test(arguments: StoreKind.allCases)
    func readersRunningDuringAppendsAlwaysSeeAConsistentPrefix(kind: StoreKind) async throws {
        var settings = StoreSettings()
        settings.readerConnections = 3
        try await withStore(kind, settings: settings) { store in
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            let appends: Int64 = 200
            let race = Race()
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for version in 1...appends {
                        do throws(StoreError) {
                            try await store.append(
                                AppendRequest(scope: "a", version: version, payload: payload("a", version)))
                        } catch {
                            race.problems.withLock { $0.append("append: \(error)") }
                        }
                    }
                    race.writerDone.store(true, ordering: .releasing)
                }
                for _ in 0..<8 {
                    group.addTask {
                        // Bounded: each reader stops at the writer's end or after 5000 reads.
                        for _ in 0..<5000 where !race.writerDone.load(ordering: .acquiring) {
                            do throws(StoreError) {
                                let page = try await store.changes(scope: "a", after: 0, limit: 1000)
                                let versions = page.records.map(\.version)
                                let expected = page.currentVersion == 0 ? [] : Array(1...page.currentVersion)
                                if versions != expected {
                                    race.problems.withLock {
                                        $0.append("page \(versions.count) vs version \(page.currentVersion)")
                                    }
                                }
                                race.pagesRead.add(1, ordering: .relaxed)
                            } catch {
                                race.problems.withLock { $0.append("read: \(error)") }
                            }
                            // SQLite reads never suspend: let the writer (and the other readers) run.
                            await Task.yield()
                        }
                    }
                }
            }
            #expect(race.problems.withLock { $0 }.isEmpty)
            #expect(race.pagesRead.load(ordering: .relaxed) > 0)
            #expect(try await store.scope(named: "a")?.version == appends)
        }
    }
}
