import Testing

@testable import JetstreamClient

/// Which own change set an undo reverts next: the pure list the sync keeps from its POST answers.
@Suite("UndoHistory")
struct UndoHistoryTests {
    @Test("the most recent own version first; each is taken once, so two undos revert two sets")
    func mostRecentFirst() {
        var history = UndoHistory()
        #expect(history.next() == nil, "nothing to undo at first")
        for version in [3, 5, 9] { history.accepted(version) }
        #expect(history.count == 3)
        #expect(history.next() == 9)
        #expect(history.next() == 5, "the second undo takes the next older set, not the first one again")
        #expect(history.next() == 3)
        #expect(history.next() == nil)
    }

    @Test("answers out of order and replays; putBack restores the order")
    func orderAndReplays() {
        var history = UndoHistory()
        for version in [7, 4, 7, 12, 0, -1] { history.accepted(version) }
        #expect(history.versions == [12, 7, 4], "descending, once each, only versions")
        let taken = history.next()
        history.accepted(10)
        if let taken { history.putBack(taken) }
        #expect(history.versions == [12, 10, 7, 4], "a version that could not be reverted is a candidate again")
    }

    @Test("keeps the most recent limit versions; 100 by default")
    func bounded() {
        var history = UndoHistory(limit: 3)
        for version in 1...10 { history.accepted(version) }
        #expect(history.versions == [10, 9, 8])
        history.accepted(2)
        #expect(history.versions == [10, 9, 8], "an older version than every kept one falls off at once")
        #expect(UndoHistory().limit == 100)
    }

    @Test("a version the server no longer keeps takes every older one with it")
    func gone() {
        var history = UndoHistory()
        for version in [2, 4, 6, 8] { history.accepted(version) }
        #expect(history.next() == 8)
        history.gone(4)
        #expect(history.versions == [6])
    }
}
