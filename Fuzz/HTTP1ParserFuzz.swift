// libFuzzer entry point for the HTTP/1.1 request parser and chunked decoder (Sources/Transport/HTTP1).
//
// Built by `Fuzz/run` together with the HTTP1 sources as one module:
//   swiftc -sanitize=fuzzer,address -parse-as-library -O Sources/Transport/HTTP1/*.swift Fuzz/HTTP1ParserFuzz.swift
//
// Properties checked on every input (a violation traps, which libFuzzer reports as a crash):
// - nothing traps (overflow, out-of-bounds, ASan findings) on any bytes;
// - the head parser is prefix-consistent: the server re-parses its buffer as bytes arrive, so the
//   result on any prefix must be `.incomplete` or the result on the whole input (two rejections
//   may name different reasons: a prefix can cross a size limit before the bad byte arrives);
// - a complete head says how many bytes it used, within the input, and its fields are sane;
// - the chunked decoder gives the same body and the same verdict whether the body arrives in one
//   piece or split at an arbitrary point.

/// The first two bytes choose the split points; the rest is the request.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1Parser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
    let headSplit = Int(data[0]) * input.count / 256
    let bodySplit = Int(data[1])

    let limits = HTTP1ParserLimits(maxHeaderBytes: 4096, maxTargetBytes: 1024, maxHeaderCount: 32)
    let whole = HTTP1RequestParser.parse(input, limits: limits)
    let prefix = HTTP1RequestParser.parse(Array(input[..<headSplit]), limits: limits)
    if prefix != .incomplete && prefix != whole && !(prefix.isInvalid && whole.isInvalid) {
        fatalError("prefix of \(headSplit) bytes gave \(prefix), the whole input gave \(whole)")
    }

    guard case .complete(let head, let consumed) = whole else { return 0 }
    checkHead(head, consumed: consumed, inputCount: input.count)
    if case .chunked = head.framing {
        checkChunkedSplit(Array(input[consumed...]), split: bodySplit)
    }
    return 0
}

private func checkHead(_ head: HTTP1RequestHead, consumed: Int, inputCount: Int) {
    if consumed < 1 || consumed > inputCount {
        fatalError("consumed \(consumed) of \(inputCount) bytes")
    }
    if head.method.isEmpty || head.target.isEmpty {
        fatalError("complete head with an empty method or target: \(head)")
    }
    if head.version != .http1_0 && head.version != .http1_1 {
        fatalError("accepted version \(head.version)")
    }
    for header in head.headers where header.name.isEmpty || header.value.first == " " || header.value.last == " " {
        fatalError("header not trimmed or unnamed: \(header)")
    }
    if case .contentLength(let length) = head.framing, length < 0 {
        fatalError("negative content length \(length)")
    }
}

/// Decodes `body` in one call and in two calls split at `split`; both must agree.
private func checkChunkedSplit(_ body: [UInt8], split: Int) {
    let maxBody = 4096
    var oneShot = HTTP1ChunkedDecoder(maxBodyBytes: maxBody, maxTrailerBytes: 512)
    var oneShotBody: [UInt8] = []
    let oneShotResult = oneShot.decode(body, into: &oneShotBody)

    let cut = min(split, body.count)
    var twoStep = HTTP1ChunkedDecoder(maxBodyBytes: maxBody, maxTrailerBytes: 512)
    var twoStepBody: [UInt8] = []
    var twoStepResult = twoStep.decode(Array(body[..<cut]), into: &twoStepBody)
    if case .needMore = twoStepResult {
        twoStepResult = twoStep.decode(Array(body[cut...]), into: &twoStepBody)
        if case .complete(let consumed) = twoStepResult {
            twoStepResult = .complete(consumed: consumed + cut)
        }
    }

    if oneShotResult != twoStepResult {
        fatalError("chunked split at \(cut): \(oneShotResult) vs \(twoStepResult)")
    }
    if case .complete = oneShotResult, oneShotBody != twoStepBody {
        fatalError("chunked split at \(cut): bodies differ")
    }
    if oneShotBody.count > maxBody || oneShot.bodyBytes != oneShotBody.count {
        fatalError("decoded \(oneShotBody.count) bytes (counted \(oneShot.bodyBytes)) over a \(maxBody) limit")
    }
}

extension HTTP1ParseResult {
    fileprivate var isInvalid: Bool {
        if case .invalid = self { true } else { false }
    }
}
