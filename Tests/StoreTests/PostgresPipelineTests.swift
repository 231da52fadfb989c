import Foundation
import PostgresStore
import Store
import TestSupport
import Testing

/// A PostgreSQL writer sends a batch while the one before it is still on its way
/// (`maximumBatchesInFlight`), over a link with a long round trip (`LossyLink`, the tests' fault
/// proxy adding latency each way). Without that, a write that arrives while a batch is in flight
/// waits for its answer and then for its own round trip.
@Suite(.serialized)
struct PostgresPipelineTests {
    /// Each way; the window in which the next batch's commit is seen before the first's answer.
    static let latency: Duration = .milliseconds(200)

    /// The first batch sleeps in a trigger at the database, so the second one is appended while
    /// the first is surely in flight; with pipelining, the second is already at the database and
    /// commits right after the first — before the first's answer, one latency away, is back.
    @Test func aWriteArrivingWhileABatchIsInFlightIsCommittedBeforeThatBatchIsAnswered() async throws {
        try await withStoreLocation(.postgres) { location in
            let cluster = try await PostgresTestCluster.shared()
            let database = try #require(location.database)
            let link = try await LossyLink.start(upstreamPort: cluster.port, faults: .init(latency: Self.latency))
            var configuration = location.settings.postgres
            // Connecting and preparing the statements take a dozen round trips through the link.
            configuration.unavailableAfter = .seconds(60)
            configuration.statementTimeout = .seconds(60)
            let store = try PostgresStore(
                url: "postgresql://postgres@127.0.0.1:\(link.port)/\(database)", configuration: configuration)
            for name in ["first", "second"] { _ = try await store.createScope(descriptor(name), snapshot: []) }
            // The store made the tables when it opened.
            try cluster.psql(
                """
                CREATE FUNCTION slow_first() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF position('"scope":"first"' in convert_from(NEW.payload, 'UTF8')) > 0 THEN
                        PERFORM pg_sleep(1);
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER slow_first BEFORE INSERT ON jetstream.changes
                    FOR EACH ROW EXECUTE FUNCTION slow_first();
                """, database: database)

            let results = ResultCollector()
            store.append(AppendRequest(scope: "first", version: 1, payload: payload("first", 1))) {
                results.add("first", $0)
            }
            // The first batch is at the database, sleeping in its trigger.
            #expect(
                await eventually(seconds: 20) {
                    (try? cluster.psql(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'", database: database))
                        == "1"
                })
            store.append(AppendRequest(scope: "second", version: 1, payload: payload("second", 1))) {
                results.add("second", $0)
            }
            var firstAnsweredBeforeSecondCommitted = false
            #expect(
                await eventually(seconds: 20) {
                    let answered = results.count > 0
                    let committed =
                        (try? cluster.psql(
                            "SELECT count(*) FROM jetstream.changes c JOIN jetstream.scopes s ON s.id = c.scope_id WHERE s.name = 'second'",
                            database: database))
                        == "1"
                    if committed { firstAnsweredBeforeSecondCommitted = answered }
                    return committed
                })
            #expect(
                !firstAnsweredBeforeSecondCommitted,
                "the second batch waited for the first's answer before it was sent")
            #expect(await eventually(seconds: 20) { results.count == 2 })
            #expect(results.succeeded("first") && results.succeeded("second"))
            store.close()
            _ = try await link.stop()
        }
    }

    /// `PostgresSharedStoreTests.aFailedAppendDoesNotBecomeTheHeadWhenItsBatchFails` with the
    /// later appends sent while the failing batch is in flight: they run in its failed transaction
    /// and fail with it, and every append of both batches is then tried alone, in order, with the
    /// same outcomes as when nothing was pipelined.
    @Test func aBatchSentBehindAFailingOneIsTriedAgainAloneInOrder() async throws {
        try await withStoreLocation(.postgres) { location in
            let cluster = try await PostgresTestCluster.shared()
            let database = try #require(location.database)
            let link = try await LossyLink.start(upstreamPort: cluster.port, faults: .init(latency: Self.latency))
            var configuration = location.settings.postgres
            configuration.unavailableAfter = .seconds(60)
            configuration.statementTimeout = .seconds(60)
            let store = try PostgresStore(
                url: "postgresql://postgres@127.0.0.1:\(link.port)/\(database)", configuration: configuration)
            _ = try await store.createScope(descriptor("s"), snapshot: [])
            try await store.append(
                AppendRequest(scope: "s", version: 1, payload: payload("s", 1), parentToken: 0, token: 1))
            try cluster.psql(
                """
                CREATE FUNCTION refuse_two() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF position('"version":2}' in convert_from(NEW.payload, 'UTF8')) > 0 THEN
                        PERFORM pg_sleep(1);
                        RAISE EXCEPTION 'injected';
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER refuse_two BEFORE INSERT ON jetstream.changes
                    FOR EACH ROW EXECUTE FUNCTION refuse_two();
                """, database: database)
            let results = ResultCollector()
            func append(_ label: String, _ version: Int64, parent: UInt64, token: UInt64) {
                var request = AppendRequest(
                    scope: "s", version: version, payload: payload("s", version), parentToken: parent, token: token)
                if label == "x" || label == "y" { request.payload = Array("{\"label\":\"\(label)\"}".utf8) }
                store.append(request) { results.add(label, $0) }
            }
            append("a", 2, parent: 1, token: 2)
            // Version 2 is at the database, in its trigger, when the others are sent.
            #expect(
                await eventually(seconds: 20) {
                    (try? cluster.psql(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'", database: database))
                        == "1"
                })
            // 3 built on 2, then 2' built on 1 and 3' built on 2', and 4 built on 3.
            append("b", 3, parent: 2, token: 3)
            append("x", 2, parent: 1, token: 20)
            append("y", 3, parent: 20, token: 30)
            append("z", 4, parent: 3, token: 40)
            #expect(await eventually(seconds: 30) { results.count == 5 })
            guard case .postgres(_, let sqlState, _) = results.failure("a") else {
                Issue.record("version 2 should fail with .postgres, got \(String(describing: results.outcome("a")))")
                return
            }
            #expect(sqlState == "P0001")
            #expect(results.failure("b") == .versionConflict(scope: "s", expected: 2, attempted: 3))
            #expect(results.succeeded("x"))
            #expect(results.succeeded("y"))
            #expect(results.failure("z") == .staleBase(scope: "s", version: 4))
            let logged = try await store.changes(scope: "s", after: 0, limit: 10).records
            #expect(logged.map(\.version) == [1, 2, 3])
            // Two batches failed whole: version 2's, and the one sent behind it (without pipelining
            // that one is sent after the failure, and commits with its refusals as outcomes).
            #expect(store.statistics.failedBatches == 2)
            store.close()
            _ = try await link.stop()
        }
    }
}
