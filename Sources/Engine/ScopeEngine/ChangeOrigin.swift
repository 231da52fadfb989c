import JetstreamModel

/// Who made a change set and why, recorded with it: in its payload, hence in its `changeset`
/// event, in history pages and in the answer to its writer, next to `"at"` (the server's time
/// when it was accepted).
///
/// ```swift
/// engine.submit(changeSet, to: handle, origin: ChangeOrigin(subject: grant.subject)) { outcome in … }
/// ```
public struct ChangeOrigin: Sendable, Hashable {
    /// The authenticated subject that sent it (`null` when anonymous).
    public var subject: String?
    /// The version a restore brought the scope back to.
    public var restoredFrom: Int?
    /// The change set a revert undid.
    public var revertOf: Int?
    /// The server method whose change set this is (`POST …/methods/{method}`).
    public var method: String?
    /// The subject's roles (a token's `roles` claim), for the schema's write rules; not recorded.
    public var roles: Set<String>

    public init(
        subject: String? = nil, roles: Set<String> = [], restoredFrom: Int? = nil, revertOf: Int? = nil,
        method: String? = nil
    ) {
        self.subject = subject
        self.roles = roles
        self.restoredFrom = restoredFrom
        self.revertOf = revertOf
        self.method = method
    }

    /// The writer the schema's rules judge: the subject with its roles.
    public var author: ChangeAuthor { ChangeAuthor(subject: subject, roles: roles) }

    /// Writes `,"at":"…","subject":…` and, when set, `,"restoredFrom":N` / `,"revertOf":V` /
    /// `,"method":"name"`.
    func write(at time: String, to writer: inout JSONWriter) {
        writer.writeRaw(#","at":"#)
        writer.write(string: time)
        writer.writeRaw(#","subject":"#)
        if let subject { writer.write(string: subject) } else { writer.writeRaw("null") }
        if let restoredFrom { writer.writeRaw(#","restoredFrom":\#(restoredFrom)"#) }
        if let revertOf { writer.writeRaw(#","revertOf":\#(revertOf)"#) }
        if let method {
            writer.writeRaw(#","method":"#)
            writer.write(string: method)
        }
    }
}

/// RFC 3339 UTC times with milliseconds (`2026-11-28T07:41:09.123Z`), written without Foundation's
/// formatters: one is made per accepted change set.
enum ChangeTime {
    static func rfc3339(millisecondsSince1970 milliseconds: Int64) -> String {
        let (days, dayMilliseconds) = milliseconds.quotientAndRemainderFlooring(dividingBy: 86_400_000)
        let (year, month, day) = civilDate(daysSince1970: days)
        let seconds = dayMilliseconds / 1000
        guard (0...9999).contains(year) else {
            return padded(year: year, month: month, day: day, dayMilliseconds: dayMilliseconds)
        }
        // The 24 bytes written in place: joining a dozen small strings cost more than the rest of
        // the event's encoding.
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int64, width: Int, at offset: Int) {
                var rest = value
                for position in (offset..<offset + width).reversed() {
                    buffer[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(year, width: 4, at: 0)
            put(month, width: 2, at: 5)
            put(day, width: 2, at: 8)
            put(seconds / 3600, width: 2, at: 11)
            put(seconds / 60 % 60, width: 2, at: 14)
            put(seconds % 60, width: 2, at: 17)
            put(dayMilliseconds % 1000, width: 3, at: 20)
            buffer[4] = UInt8(ascii: "-")
            buffer[7] = UInt8(ascii: "-")
            buffer[10] = UInt8(ascii: "T")
            buffer[13] = UInt8(ascii: ":")
            buffer[16] = UInt8(ascii: ":")
            buffer[19] = UInt8(ascii: ".")
            buffer[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    /// The same for a year outside 0…9999, which has no fixed width.
    private static func padded(year: Int64, month: Int64, day: Int64, dayMilliseconds: Int64) -> String {
        let seconds = dayMilliseconds / 1000
        var text = ""
        text.reserveCapacity(24)
        text += pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
        text += pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        text += "." + pad(dayMilliseconds % 1000, 3) + "Z"
        return text
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// An RFC 3339 time (`2026-11-28T16:23:24.123Z`, any number of fraction digits or none, `Z`
    /// or an offset such as `+01:00`) in milliseconds since 1970; nil when it is not one. Read by
    /// hand, as it is written: every keyed write of the clients carries one
    /// (`Idempotency-Key-Created`).
    static func milliseconds(rfc3339 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int) -> Int64? {
            guard index + digits <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + digits] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            index += digits
            return value
        }
        func expect(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction: Int64 = 0
        if expect(".") {
            let start = index
            var scale: Int64 = 100
            while let digit = number(1) {
                fraction += digit * scale
                scale /= 10
            }
            guard index > start else { return nil }
        }
        var offsetMinutes: Int64 = 0
        if !expect("Zz") {
            guard index < bytes.count else { return nil }
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard expect("+-"), let offsetHours = number(2), expect(":"), let offsetMinute = number(2),
                offsetHours < 24, offsetMinute < 60
            else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMinute)
        }
        guard index == bytes.count else { return nil }
        let seconds =
            daysSince1970(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60
            + min(second, 59) - offsetMinutes * 60
        return seconds * 1000 + fraction
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Howard Hinnant's days-from-civil algorithm, the inverse of ``civilDate(daysSince1970:)``.
    private static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    private static func civilDate(daysSince1970 days: Int64) -> (Int64, Int64, Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    fileprivate func quotientAndRemainderFlooring(dividingBy divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
