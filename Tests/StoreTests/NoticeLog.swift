import Store
import Synchronization

/// Collects the ``ChangeNotice``s a shared store delivers, from whatever thread it delivers them on.
final class NoticeLog: Sendable {
    private let notices = Mutex<[ChangeNotice]>([])

    func add(_ notice: ChangeNotice) { notices.withLock { $0.append(notice) } }

    /// Every notice so far, in the order delivered.
    var all: [ChangeNotice] { notices.withLock { $0 } }

    /// Every scope version announced so far by `.changed` notices.
    var changed: [ScopeVersion] {
        all.flatMap { notice -> [ScopeVersion] in
            if case .changed(let versions) = notice { versions } else { [] }
        }
    }
}
