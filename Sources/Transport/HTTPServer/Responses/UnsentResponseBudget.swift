import Synchronization

/// The server-wide bound on response bytes made for one request (a history page, an expanded
/// object) that connections hold unsent: ``HTTPServerConfiguration/maxUnsentBytes``.
///
/// A large body is charged when its handler answers, before the access log sees the answer; the
/// ``Charge`` travels with the response and is returned when the last byte is written or the
/// connection drops it (it lives as long as the buffer the body is written from). A safe request
/// (GET, HEAD) whose body does not fit is answered 503 instead; any other request has already
/// acted (a change set is committed), so its answer is charged past the bound rather than lost.
///
/// ```swift
/// let budget = UnsentResponseBudget(limit: 256 << 20)
/// if let charge = budget.charge(body.count, refusable: true) { response.unsentCharge = charge }
/// ```
final class UnsentResponseBudget: Sendable {
    /// Bodies at least this large are charged; smaller ones are bounded by the connection count
    /// (a socket's send buffer usually takes them at once).
    static let chargedBodySize = 16 * 1024

    /// The bound in bytes; 0 for none.
    let limit: Int
    private let held = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Bytes charged now.
    var heldBytes: Int { held.load(ordering: .relaxed) }

    /// Charges `count` bytes. Returns nil (nothing charged) when they do not fit and the answer is
    /// `refusable`; an answer that is not is charged even past the bound.
    func charge(_ count: Int, refusable: Bool) -> Charge? {
        let total = held.add(count, ordering: .relaxed).newValue
        if refusable, limit > 0, total > limit {
            held.subtract(count, ordering: .relaxed)
            return nil
        }
        return Charge(budget: self, count: count)
    }

    /// Whether `count` bytes fit now (the bound may be reached before they are charged).
    func fits(_ count: Int) -> Bool {
        limit == 0 || heldBytes + count <= limit
    }

    fileprivate func release(_ count: Int) {
        held.subtract(count, ordering: .relaxed)
    }

    /// Bytes taken from the budget, returned when the charge is freed.
    final class Charge: Sendable {
        private let budget: UnsentResponseBudget
        let count: Int

        fileprivate init(budget: UnsentResponseBudget, count: Int) {
            self.budget = budget
            self.count = count
        }

        deinit { budget.release(count) }
    }
}
