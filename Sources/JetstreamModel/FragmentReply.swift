import JetstreamJSON

/// The answer for one fragment of a rejected change set: `{}` when the fragment was fine on its
/// own, `{"error":{…}}` when it was not.
///
/// ```swift
/// FragmentReply.ok.jsonValue.encodedString()   // {}
/// ```
public enum FragmentReply: Sendable, Hashable {
    case ok
    case error(FragmentError)

    /// The error, or nil for `{}`.
    public var error: FragmentError? {
        if case .error(let error) = self { return error }
        return nil
    }

    /// `{}` or `{"error":{"type","message","property"}}`.
    public var jsonValue: JSONValue {
        switch self {
        case .ok: .object(JSONObject())
        case .error(let error): .object(JSONObject([JSONObject.Member(key: "error", value: error.jsonValue)]))
        }
    }
}
