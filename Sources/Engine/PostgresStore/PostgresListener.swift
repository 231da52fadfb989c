import CLibPQ
import Dispatch
import Foundation
import Logging
import Store
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The node's dedicated `LISTEN` connection and its thread: every notification becomes a
/// ``ChangeNotice`` for the handler; every poll interval (and after every reconnect) the handler
/// gets ``ChangeNotice/everything``, so a node that missed notifications — its connection dropped,
/// or killed by an operator — re-reads every scope's version instead of trusting the hints.
/// While it is down, ``unavailability`` says why (the gateway's `/readyz` answers 503).
/// It also listens on the presence channel and hands those texts to the presence handler as they are.
final class PostgresListener: Sendable {
    private let handler = CallbackSlot<ChangeNotice>()
    private let presenceHandler = CallbackSlot<String>()
    private let closed = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let problem = Mutex<String?>(nil)
    /// When the database last answered on this connection (a notification, a poll, the connect).
    private let lastAnswer = Mutex(ContinuousClock.now)
    private let silenceLimit: Duration

    init(
        target: PGTarget, configuration: PostgresStore.Configuration, statistics: PostgresCounters,
        logger: Logger, expiryDue: @escaping @Sendable () -> Void
    ) {
        silenceLimit = configuration.unavailableAfter
        let thread = Thread { [self] in
            defer { finished.signal() }
            run(
                target: target, configuration: configuration, statistics: statistics, logger: logger,
                expiryDue: expiryDue)
        }
        thread.name = "jetstream-pg-listener"
        thread.start()
    }

    /// Why the listener has no connection now, or why it is not trusted (no answer for longer
    /// than `unavailableAfter`: a link gone silent sends no error); nil while it listens.
    var unavailability: String? {
        if let problem = problem.withLock({ $0 }) { return problem }
        let silent = ContinuousClock.now - lastAnswer.withLock { $0 }
        guard silent > silenceLimit else { return nil }
        let seconds = Double(silent.components.seconds) + Double(silent.components.attoseconds) / 1e18
        return "no answer from the database for \(String(format: "%.1f", seconds)) s"
    }

    private func heard() {
        lastAnswer.withLock { $0 = .now }
    }

    func follow(_ handler: @escaping @Sendable (ChangeNotice) -> Void) {
        self.handler.set(handler)
        handler(.everything)
    }

    func followPresence(_ handler: @escaping @Sendable (String) -> Void) {
        presenceHandler.set(handler)
    }

    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        finished.signal()
    }

    private func deliver(_ notice: ChangeNotice) {
        handler(notice)
    }

    private func run(
        target: PGTarget, configuration: PostgresStore.Configuration, statistics: PostgresCounters,
        logger: Logger, expiryDue: @Sendable () -> Void
    ) {
        let expiryInterval = Duration.milliseconds(configuration.idempotencyExpiryIntervalMilliseconds)
        var nextExpiry = ContinuousClock.now + expiryInterval
        let tick = {
            guard ContinuousClock.now >= nextExpiry else { return }
            nextExpiry = ContinuousClock.now + expiryInterval
            expiryDue()
        }
        var backoff: Duration = .milliseconds(50)
        var everConnected = false
        // Why the last connection ended: an outage only if connecting again fails too. A lost
        // connection alone (its backend terminated, a proxy restarted) reconnects at once, and the
        // streams stay open meanwhile; a database that stays silent is caught by the silence
        // limit (``unavailability``) while the new connection is being made.
        var lostConnection: String?
        while !closed.load(ordering: .acquiring) {
            let connection: PGConnection
            do throws(StoreError) {
                connection = try PGConnection(
                    target: target, applicationName: "\(configuration.applicationName)-listener",
                    timeout: configuration.answerTimeout)
                try connection.query("LISTEN \(PostgresStatements.channel)")
                try connection.query("LISTEN \(PostgresStatements.presenceChannel)")
            } catch {
                let reason = lostConnection.map { "the database connection was lost (\($0)) and " } ?? "the database "
                problem.withLock { $0 = reason + "is unreachable: \(error)" }
                logger.warning(
                    "listener cannot connect; retrying", metadata: ["error": "\(error)", "in": "\(backoff)"])
                sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
                continue
            }
            backoff = .milliseconds(50)
            heard()
            problem.withLock { $0 = nil }
            lostConnection = nil
            statistics.withLock { statistics in
                statistics.listenerUp = true
                if everConnected { statistics.reconnects += 1 }
            }
            if everConnected { logger.info("listener reconnected; re-reading every scope's version") }
            everConnected = true
            connection.onNotification = { [self] channel, payload in
                switch channel {
                case PostgresStatements.channel:
                    statistics.withLock { $0.notificationsReceived += 1 }
                    deliver(ChangeNotice(payload: payload))
                case PostgresStatements.presenceChannel:
                    presenceHandler(payload)
                default:
                    break
                }
            }
            // Whatever happened while we were not listening is read now.
            deliver(.everything)
            listen(on: connection, configuration: configuration, logger: logger, tick: tick)
            statistics.withLock { $0.listenerUp = false }
            if !closed.load(ordering: .acquiring) {
                lostConnection = connection.errorMessage
                logger.warning(
                    "listener connection lost; reconnecting", metadata: ["error": "\(connection.errorMessage)"])
            }
        }
    }

    /// Waits on the socket, drains notifications, ticks every poll interval; returns when the
    /// connection fails or the listener closes.
    private func listen(
        on connection: PGConnection, configuration: PostgresStore.Configuration, logger: Logger, tick: () -> Void
    ) {
        var nextPoll = ContinuousClock.now + configuration.pollInterval
        while !closed.load(ordering: .acquiring) {
            let socket = PQsocket(connection.raw)
            guard socket >= 0 else { return }
            let wait = min(nextPoll - ContinuousClock.now, .milliseconds(250))
            let milliseconds = max(
                0, Int32(clamping: wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)
            )
            let ready = clibpq_wait(socket, Int16(POLLIN), milliseconds)
            if ready < 0, errno != EINTR { return }
            if ready > 0 {
                do throws(StoreError) {
                    try connection.consumeInput()
                } catch {
                    return
                }
                guard connection.isHealthy else { return }
                heard()
            }
            if ContinuousClock.now >= nextPoll {
                nextPoll = ContinuousClock.now + configuration.pollInterval
                // A round trip proves the connection alive (a silent network loss shows here).
                do throws(StoreError) {
                    try connection.query("SELECT 1")
                } catch {
                    return
                }
                heard()
                deliver(.everything)
                tick()
            }
        }
    }

    private func sleep(for duration: Duration) {
        let until = ContinuousClock.now + duration
        while !closed.load(ordering: .acquiring), ContinuousClock.now < until {
            Thread.sleep(forTimeInterval: 0.05)
        }
    }
}
