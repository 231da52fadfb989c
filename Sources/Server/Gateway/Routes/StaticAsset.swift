import HTTPServer
import HTTPTypes

/// A file the gateway serves as it is from bytes embedded in the binary (the JS client, the
/// demo page): its media type and a strong `ETag` computed once from the bytes. Every answer says
/// `Cache-Control: no-cache` (a browser revalidates, and gets `304` while the binary is the same)
/// and `X-Content-Type-Options: nosniff`.
///
/// ```swift
/// let asset = StaticAsset(file: "jetstream.mjs", body: PackageResources.jetstream_mjs)   // text/javascript
/// router.get("/client/jetstream.mjs") { request, _ in asset.response(to: request) }
/// // If-None-Match: "<asset.entityTag>" → 304 with the same ETag and no body
/// ```
struct StaticAsset: Sendable {
    let body: [UInt8]
    let contentType: String
    /// The opaque part of the `ETag`: 16 hex digits of the bytes' FNV-1a 64-bit hash.
    let entityTag: String

    init(body: [UInt8], contentType: String, entityTag: String? = nil) {
        self.body = body
        self.contentType = contentType
        self.entityTag = entityTag ?? Self.fnv1a64Hex(body)
    }

    /// An asset whose media type follows from its file name (``contentType(ofFile:)``).
    init(file name: String, body: [UInt8]) {
        self.init(body: body, contentType: Self.contentType(ofFile: name))
    }

    /// The media types of the files the gateway serves, by the end of the name; the first match
    /// wins (so `.d.ts` is TypeScript). Every one of them is UTF-8 text.
    static let mediaTypes: [(suffix: String, type: String)] = [
        (".d.ts", "application/typescript"), (".mjs", "text/javascript"), (".js", "text/javascript"),
        (".css", "text/css"), (".html", "text/html"),
    ]

    /// The `Content-Type` of a file named `name`: its ``mediaTypes`` entry (`text/plain`
    /// otherwise) with `charset=utf-8`.
    static func contentType(ofFile name: String) -> String {
        let type = mediaTypes.first { name.hasSuffix($0.suffix) }?.type ?? "text/plain"
        return type + "; charset=utf-8"
    }

    /// `ETag` as sent: `"<16 hex digits>"`.
    var eTagHeader: String { "\"\(entityTag)\"" }

    /// `200` with the bytes, or `304` when `If-None-Match` names this version (or is `*`).
    func response(to request: HTTPServerRequest) -> HTTPServerResponse {
        var fields: HTTPFields = [
            .eTag: eTagHeader, .cacheControl: "no-cache", Self.contentTypeOptions: "nosniff",
        ]
        if let condition = request.headerFields[.ifNoneMatch], EntityTag.noneMatchIncludes(condition, entityTag) {
            return HTTPServerResponse(status: .notModified, headerFields: fields)
        }
        fields[.contentType] = contentType
        return HTTPServerResponse(status: .ok, headerFields: fields, body: body)
    }

    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!

    /// FNV-1a, 64 bits: a content hash for a validator, not for security (the bytes are the
    /// server's own), so no cryptography dependency is needed.
    static func fnv1a64Hex(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
