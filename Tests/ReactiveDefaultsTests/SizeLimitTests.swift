import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// A store over memory that keeps the size limit of an Apple platform, as the library does there; its issues
/// recorded.
private func limitedStore(
  _ limit: DomainSizeBudget.Limit, initial: [PropertyListKey: PropertyListValue] = [:]
) -> (DefaultsStore, MemoryStorage, Recorder<DefaultsError>) {
  let storage = MemoryStorage(initial, behavior: .init(reportsKeyChanges: true, sizeLimit: limit))
  let store = DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
  let issues = Recorder<DefaultsError>()
  store.issueHandler = { issues.append($0) }
  return (store, storage, issues)
}

private let blob = DefaultsKey<Data>("blob", default: Data())
private let other = DefaultsKey<Data>("other", default: Data())

private func bytes(_ count: Int) -> Data { Data(repeating: 0x2A, count: count) }

/// Apple platforms' limits on a defaults domain (iOS, iPadOS, watchOS, visionOS: 4 MiB, refused and dropped by the
/// system; tvOS: a warning at 512 KB, termination at 1 MB): a write that would reach the limit is refused with a
/// typed error and the stored value kept, on Linux through the in-memory storage's Apple mode.
@Suite struct SizeLimitTests {
  @Test func aWriteThatWouldReachTheLimitIsRefusedAndTheValueKept() throws {
    let (store, _, issues) = limitedStore(.init(refusedAt: 10_000, warnedAt: nil))
    let seen = Recorder<Int>()
    let token = store.property(blob).observe { seen.append($0.count) }
    store[blob] = bytes(4_000)
    #expect(throws: DefaultsError.self) { try store.set(bytes(20_000), for: blob) }
    do {
      try store.set(bytes(20_000), for: blob)
    } catch {
      guard case .domainTooLarge(let key, let size, let limit) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(key == "blob")
      #expect(size >= 20_000)
      #expect(limit == 10_000)
    }
    #expect(store[blob].count == 4_000, "the stored value is kept")
    #expect(seen.values == [0, 4_000], "a refused write changes nothing, so observers hear nothing")
    #expect(issues.values.isEmpty, "set(_:for:) throws; it does not report too")
    // The subscript's setter cannot throw: it reports.
    store[other] = bytes(8_000)
    #expect(store[other].isEmpty)
    #expect(issues.values.count == 1)
    if case .domainTooLarge(let key, _, _)? = issues.values.first { #expect(key == "other") } else { Issue.record() }
    // Room made, the write goes in.
    store.reset(blob)
    store[other] = bytes(8_000)
    #expect(store[other].count == 8_000)
    withExtendedLifetime(token) {}
  }

  /// iOS's real figure: 4 MiB. A suite just under it takes a small write and refuses the one that reaches it.
  @Test func iOSRefusesADomainOfFourMebibytes() throws {
    let (store, _, _) = limitedStore(.embedded)
    let limit = 4 << 20
    // An entry of `n` bytes of data under "blob" counts n + 20 (4 + 8 for the key, n + 8 for the value).
    try store.set(bytes(limit - 50 - 20), for: blob)
    // "other" with 28 bytes counts 49: one byte short of the limit.
    try store.set(bytes(28), for: other)
    // "t" with none counts 17: the limit reached.
    let third = DefaultsKey<Data>("t", default: Data())
    #expect(throws: DefaultsError.domainTooLarge(key: "t", size: limit + 16, limit: limit)) {
      try store.set(Data(), for: third)
    }
    #expect(store.keys.sorted() == ["blob", "other"])
  }

  /// A write that does not grow the suite always goes in, even over the limit (a suite another process filled):
  /// it is the way back under it. One that grows it is refused.
  @Test func aSuiteOverTheLimitTakesWritesThatShrinkIt() throws {
    let (store, _, _) = limitedStore(
      .init(refusedAt: 10_000, warnedAt: nil), initial: ["blob": .data(bytes(50_000)), "small": .integer(1)])
    try store.set(bytes(30_000), for: blob)
    #expect(store[blob].count == 30_000)
    try store.set(bytes(30_000), for: blob)
    #expect(throws: DefaultsError.self) { try store.set(bytes(10), for: other) }
    store.reset(blob)
    try store.set(bytes(10), for: other)
    #expect(store[other].count == 10)
  }

  /// tvOS: a warning each time the suite grows past 512 KB (the write is stored), a refusal at 1 MB (decimal: the
  /// smaller reading of Apple's figures).
  @Test func tvOSWarnsFrom512KilobytesAndRefusesAtOneMegabyte() throws {
    let (store, _, issues) = limitedStore(.tvOS)
    try store.set(bytes(600_000), for: blob)
    #expect(store[blob].count == 600_000)
    #expect(issues.values.count == 1)
    guard case .domainNearingLimit("blob", let size, 1_000_000)? = issues.values.first else {
      Issue.record("\(issues.values)")
      return
    }
    #expect(size > 600_000)
    try store.set(bytes(100), for: other)
    #expect(issues.values.count == 1, "warned once while the suite stays past 512 KB")
    #expect(throws: DefaultsError.self) { try store.set(bytes(400_000), for: other) }
    #expect(store[other].count == 100)
    try store.set(bytes(1_000), for: blob)
    try store.set(bytes(600_000), for: blob)
    #expect(issues.values.count == 2, "warned again after the suite went back under 512 KB")
  }

  /// An edit is all or nothing against the limit too: one write too many and none is stored.
  @Test func anEditThatWouldReachTheLimitWritesNothing() throws {
    let (store, _, _) = limitedStore(.init(refusedAt: 10_000, warnedAt: nil))
    store[blob] = bytes(1_000)
    #expect(throws: DefaultsError.self) {
      try store.edit { tx in
        tx[blob] = bytes(2_000)
        tx[other] = bytes(9_000)
      }
    }
    #expect(store[blob].count == 1_000)
    #expect(store[other].isEmpty)
    // Within the limit as a whole, even if one write alone would pass it before the other frees room.
    try store.edit { tx in
      tx[other] = bytes(9_000)
      tx[blob] = Data()
    }
    #expect(store[other].count == 9_000)
  }

  /// Another process's write of an observed key (reported by key-value observing) is counted: the suite's size
  /// follows it without measuring the whole suite again.
  @Test func anotherProcessesWriteIsCounted() async throws {
    let (store, storage, _) = limitedStore(.init(refusedAt: 10_000, warnedAt: nil))
    let seen = Recorder<Int>()
    let token = store.property(other).observe { seen.append($0.count) }
    store[blob] = bytes(1_000)
    storage.writeFromOutside(.data(bytes(8_500)), forKey: "other")
    #expect(await seen.wait { $0.last == 8_500 })
    #expect(throws: DefaultsError.self) {
      try store.set(bytes(1_000), for: DefaultsKey<Data>("third", default: Data()))
    }
    // A change the hub cannot tell key by key: `refresh()` measures the whole suite again.
    storage.writeInProcess(nil, forKey: "other")
    store.refresh()
    try store.set(bytes(1_000), for: DefaultsKey<Data>("third", default: Data()))
    withExtendedLifetime(token) {}
  }

  /// The estimate is at least what a binary property list of the suite takes (CFPreferences' own count is about
  /// that, or less: the "approximate encoded size" it logs is a string's length or data's size).
  @Test func theEstimateIsAtLeastTheBinaryPropertyListSize() throws {
    let domains: [[PropertyListKey: PropertyListValue]] = [
      ["a": .integer(1)],
      ["text": .string(String(repeating: "é", count: 1_000)), "n": .real(1.5), "b": .bool(true), "d": .date(Date())],
      ["list": .array((0..<500).map { .integer(Int128($0) * 1_000_003) })],
      [
        "nested": .dictionary(
          Dictionary(
            uniqueKeysWithValues: (0..<200).map { (PropertyListKey("k\($0)"), PropertyListValue.data(bytes($0))) }))
      ],
    ]
    for domain in domains {
      let estimate = DomainSizeBudget.sizes(of: domain).values.reduce(0, +)
      let object = NSDictionary(
        dictionary: Dictionary(uniqueKeysWithValues: domain.map { ($0.key.string, $0.value.foundationObject) }))
      let binary = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
      // Less the binary format's header and trailer, which CFPreferences does not count.
      #expect(estimate >= binary.count - 40, "\(domain.keys): \(estimate) < \(binary.count)")
    }
  }

  /// Linux and macOS keep no such limit (a Linux suite's file may hold 64 MiB).
  @Test func platformsWithoutALimit() {
    #if os(Linux) || os(macOS)
      #expect(DomainSizeBudget.platform == nil)
      #expect(UserDefaultsStorage(UserDefaults.standard, domain: nil).sizeLimit == nil)
    #endif
  }
}
