import Foundation
import Synchronization

/// The size Apple platforms allow a defaults domain, and a running estimate of one suite's size, so that a write
/// that would take the suite past it is refused (``DefaultsError/domainTooLarge(key:size:limit:)``) instead of being
/// dropped by the system (iOS) or ending the app (tvOS).
///
/// Platform-neutral: Apple platforms get a limit from ``platform``, and the in-memory storage's Apple mode takes one
/// for tests. Each write costs the size of its new value (computed as it is stored) and two dictionary operations;
/// the whole suite is measured once, and again after a change the hub did not make (another process, a plain
/// `UserDefaults` write), which storage reports.
final class DomainSizeBudget: Sendable {
  /// Where a platform refuses a domain, and where it warns first.
  struct Limit: Sendable, Equatable {
    /// The smallest estimated size refused.
    var refusedAt: Int
    /// The estimated size from which each growing write is reported once as a warning (tvOS), if any.
    var warnedAt: Int?

    /// iOS, iPadOS, watchOS and visionOS: CFPreferences refuses to store a domain of 4 MiB or more and drops the
    /// write. No Apple page states it: the figure is the system's own log line on iOS ("Attempting to store >= 4194304
    /// bytes of data in CFPreferences/NSUserDefaults on this platform is invalid", Apple developer forums thread
    /// 722096), taken to hold on watchOS and visionOS too, which share iOS's preferences.
    static let embedded = Limit(refusedAt: 4 << 20, warnedAt: nil)
    /// tvOS: the system warns at 512 kilobytes and terminates the app once the domain "reaches or exceeds 1
    /// megabyte" (Apple's `UserDefaults.sizeLimitExceededNotification` page), read as the smaller decimal figures.
    static let tvOS = Limit(refusedAt: 1_000_000, warnedAt: 512_000)
  }

  /// This platform's limit: none on macOS (nor Mac Catalyst, which runs macOS's preferences) or Linux, whose
  /// suites keep the library's 64 MiB file limit.
  static var platform: Limit? {
    #if os(tvOS)
      .tvOS
    #elseif (os(iOS) && !targetEnvironment(macCatalyst)) || os(watchOS) || os(visionOS)
      .embedded
    #else
      nil
    #endif
  }

  private struct State {
    /// Each key's estimated size, and their total; nil until measured, or after a change the hub did not make.
    var sizes: [PropertyListKey: Int]?
    var total = 0
    /// Counts the changes made outside the hub: a measure taken before one is not installed.
    var generation = 0
    /// Whether the warning was given since the size last went below its threshold.
    var warned = false

    /// Forgets the warning once the suite is under the warning's threshold.
    mutating func settleWarning(_ limit: Limit) {
      if let threshold = limit.warnedAt, total < threshold { warned = false }
    }
  }

  let limit: Limit
  private let state = Locked(State())

  init(limit: Limit) {
    self.limit = limit
  }

  /// Decides whether `value` (nil: a removal) may be stored under `key` (call it holding the hub's write gate, so
  /// that writes are decided in the order they are applied). Returns the refusal (nothing is recorded, and the
  /// stored value stays as it was), or the warning to give once the write is applied, or neither.
  /// `measure` gives the whole suite, when it must be measured. `refusing == false`: the write was admitted already
  /// (``refusal(of:measuring:)``), and is only recorded.
  func admit(
    _ value: PropertyListValue?, forKey key: String, refusing: Bool = true,
    measuring measure: () -> [PropertyListKey: PropertyListValue]
  ) -> (refusal: DefaultsError?, warning: DefaultsError?) {
    let name = PropertyListKey(key)
    let added = value.map { Self.size(of: name, $0) } ?? 0
    return measured(measure) { state -> (refusal: DefaultsError?, warning: DefaultsError?) in
      let removed = state.sizes?[name] ?? 0
      let total = state.total - removed + added
      // A write that does not grow the suite is never refused: it is the way back under the limit.
      if refusing && added > removed && total >= limit.refusedAt {
        return (.domainTooLarge(key: key, size: total, limit: limit.refusedAt), nil)
      }
      state.sizes?[name] = value == nil ? nil : added
      state.total = total
      state.settleWarning(limit)
      guard let threshold = limit.warnedAt, total >= threshold, added > removed, !state.warned else {
        return (nil, nil)
      }
      state.warned = true
      return (nil, .domainNearingLimit(key: key, size: total, limit: limit.refusedAt))
    }
  }

  /// Why `writes`, taken as one (an edit's), would be refused, or nil; records nothing
  /// (``admit(_:forKey:refusing:measuring:)`` records each). Refused when they grow the suite to the limit: the
  /// refusal names the key whose write grew it most.
  func refusal(
    of writes: [(key: String, value: PropertyListValue?)], measuring measure: () -> [PropertyListKey: PropertyListValue]
  ) -> DefaultsError? {
    var sizes: [PropertyListKey: Int] = [:]
    for (key, value) in writes {
      let name = PropertyListKey(key)
      sizes[name] = value.map { Self.size(of: name, $0) } ?? 0
    }
    return measured(measure) { state -> DefaultsError? in
      var total = state.total
      var largest: (key: PropertyListKey, growth: Int)?
      for (name, size) in sizes {
        let growth = size - (state.sizes?[name] ?? 0)
        total += growth
        if growth > (largest?.growth ?? 0) { largest = (name, growth) }
      }
      guard let largest, total >= limit.refusedAt, total > state.total else { return nil }
      return .domainTooLarge(key: largest.key.string, size: total, limit: limit.refusedAt)
    }
  }

  /// Runs `body` on the measured state, measuring the whole suite first if it is not (outside the lock: `measure`
  /// reads storage), again if a change outside the hub came in meanwhile.
  private func measured<T>(
    _ measure: () -> [PropertyListKey: PropertyListValue], _ body: (inout State) -> T
  ) -> T {
    while true {
      let generation = state.withLock { $0.sizes == nil ? $0.generation : nil }
      let taken = generation.map { _ in Self.sizes(of: measure()) }
      let result = state.withLock { state -> T? in
        if state.sizes == nil {
          guard let taken, state.generation == generation else { return nil }
          state.sizes = taken
          state.total = taken.values.reduce(0, +)
          state.settleWarning(limit)
        }
        return body(&state)
      }
      if let result { return result }
    }
  }

  /// Records the sizes of `keys` as `read` finds them now (another hub or process wrote them); `read` gives nil for
  /// a key it cannot tell (then the whole suite is measured again at the next write).
  func update(_ keys: [String], read: (String) -> PropertyListValue??) {
    let found = keys.map { key in (PropertyListKey(key), read(key)) }
    state.withLock { state in
      state.generation += 1
      guard state.sizes != nil else { return }
      for (name, value) in found {
        guard let value else {
          state.sizes = nil
          state.total = 0
          return
        }
        let size = value.map { Self.size(of: name, $0) }
        state.total += (size ?? 0) - (state.sizes?[name] ?? 0)
        state.sizes?[name] = size
      }
      state.settleWarning(limit)
    }
  }

  /// Forgets the measure: the suite changed in a way the hub did not make (the next write measures it again).
  func invalidate() {
    state.withLock { state in
      state.generation += 1
      state.sizes = nil
      state.total = 0
    }
  }

  /// The estimated size of each entry.
  static func sizes(of domain: [PropertyListKey: PropertyListValue]) -> [PropertyListKey: Int] {
    var sizes: [PropertyListKey: Int] = [:]
    sizes.reserveCapacity(domain.count)
    for (key, value) in domain { sizes[key] = size(of: key, value) }
    return sizes
  }

  /// An entry's estimated stored size: about what a binary property list takes (each key and string in UTF-8,
  /// data as its bytes, 8 bytes per number or date, and 8 bytes of overhead per object), which is at least what
  /// CFPreferences counts (the "approximate encoded size" it logs is a string's length or data's size).
  static func size(of key: PropertyListKey, _ value: PropertyListValue) -> Int {
    key.string.utf8.count + 8 + size(of: value)
  }

  private static func size(of value: PropertyListValue) -> Int {
    switch value {
    case .string(let text): text.utf8.count + 8
    case .data(let bytes): bytes.count + 8
    case .integer, .real, .date: 16
    case .bool: 9
    case .array(let elements): elements.reduce(8) { $0 + size(of: $1) }
    case .dictionary(let entries): entries.reduce(8) { $0 + $1.key.string.utf8.count + 8 + size(of: $1.value) }
    }
  }
}
