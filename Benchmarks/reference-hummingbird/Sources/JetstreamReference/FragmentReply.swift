/// One entry of `fragmentReplies`: `{}` for an accepted fragment, `{"error":{…}}` for a refused one.
struct FragmentReply: Sendable, Encodable {
    let error: FragmentError?

    static let ok = FragmentReply(error: nil)

    // Synthesised conformance would also omit a nil `error`; spelled out so `{}` is explicit.
    private enum CodingKeys: String, CodingKey {
        case error
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(error, forKey: .error)
    }
}
