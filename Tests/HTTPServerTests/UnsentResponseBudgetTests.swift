import HTTPTypes
import SocketLoop
import Testing

@testable import HTTPServer

/// The unsent-bytes budget: safe answers are refused past it, others are charged past it, and a
/// charge comes back when the buffer written from is freed.
@Suite struct UnsentResponseBudgetTests {
    @Test func aSafeAnswerThatDoesNotFit_IsRefused_AndAWriteIsChargedPastTheBound() {
        let budget = UnsentResponseBudget(limit: 100_000)
        let first = budget.charge(60_000, refusable: true)
        #expect(first != nil)
        #expect(budget.charge(60_000, refusable: true) == nil)
        #expect(budget.heldBytes == 60_000)
        let write = budget.charge(60_000, refusable: false)
        #expect(write != nil)
        #expect(budget.heldBytes == 120_000)
        _ = (first, write)
    }

    @Test func whatFits_IsWhatAChargeWouldTake_AndEverythingFitsWithoutABound() {
        let budget = UnsentResponseBudget(limit: 100_000)
        let held = budget.charge(60_000, refusable: true)
        #expect(budget.fits(40_000))
        #expect(!budget.fits(40_001))
        #expect(budget.charge(40_001, refusable: true) == nil)
        #expect(budget.fits(100_000) == false)
        withExtendedLifetime(held) {}
        #expect(UnsentResponseBudget(limit: 0).fits(1 << 40))
    }

    @Test func aChargeIsReturned_WhenTheSharedBufferCarryingItIsFreed() {
        let budget = UnsentResponseBudget(limit: 0)
        var response = HTTPServerResponse(status: .ok, body: Array(repeating: 1, count: 20_000))
        response.unsentCharge = budget.charge(20_000, refusable: true)
        ResponseFinalizer.shareChargedBody(&response, sendsBody: true)
        #expect(response.body.isEmpty && response.sharedBody?.count == 20_000 && response.unsentCharge == nil)
        #expect(budget.heldBytes == 20_000)
        var slice: ByteSlice? = response.sharedBody.map { ByteSlice($0) }
        response = HTTPServerResponse()
        #expect(budget.heldBytes == 20_000)  // a connection still holds a slice of it
        slice = nil
        #expect(slice == nil && budget.heldBytes == 0)
    }

    @Test func aBodyThatIsNotSent_KeepsNoBuffer_AndItsChargeEndsWithTheResponse() {
        let budget = UnsentResponseBudget(limit: 0)
        do {
            var response = HTTPServerResponse(status: .ok, body: Array(repeating: 1, count: 20_000))
            response.unsentCharge = budget.charge(20_000, refusable: true)
            ResponseFinalizer.shareChargedBody(&response, sendsBody: false)  // HEAD
            #expect(response.sharedBody == nil)
            #expect(budget.heldBytes == 20_000)
        }
        #expect(budget.heldBytes == 0)
    }
}
