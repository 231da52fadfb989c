/// One element of a change set's `fragments`: the fragment, or why it is malformed. Decoding never
/// fails, so the rest of the body is still read and every fragment gets a reply.
struct FragmentEntry: Sendable, Decodable {
    let result: Result<FragmentRequest, FragmentError>

    init(from decoder: any Decoder) throws {
        do {
            result = .success(try FragmentRequest(from: decoder))
        } catch let error as FragmentError {
            result = .failure(error)
        } catch {
            result = .failure(FragmentError(.malformedFragment, "a fragment must be an object"))
        }
    }
}
