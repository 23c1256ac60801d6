import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct NamesAndSizesTests {
  @Test func anEmptyKeyIsRefusedWithAMessageThatSaysWhy() {
    let (store, issues) = makeStore()
    let empty = DefaultsKey<String?>("")
    let seen = Recorder<String?>()
    let token = store.property(empty).observe { seen.append($0) }
    store[empty] = "x"
    #expect(store.userDefaults.object(forKey: "") == nil)
    #expect(seen.values == [nil])
    #expect(issues.values.allSatisfy { $0 == .invalidKey("") })
    #expect(DefaultsError.invalidKey("").description.contains("non-empty name"))
    withExtendedLifetime(token) {}
  }

  @Test(arguments: [
    String(repeating: "k", count: 10_240), "ключ-🔑-鍵", "com.example.dotted.key", "user@example.com", "a.b@c.d",
    "with space", "\u{1F600}",
  ])
  func unusualKeyNamesRoundTripAndAreObserved(_ name: String) {
    let (store, _) = makeStore()
    defer { removeSuiteFile(store.suiteName!) }
    let key = DefaultsKey<Int>(name, default: 0)
    let seen = Recorder<Int>()
    let token = store.property(key).observe(initial: false) { seen.append($0) }
    store[key] = 42
    #expect(seen.values == [42])
    #expect(store.userDefaults.integer(forKey: name) == 42)
    store.flush()
    #expect(DefaultsStore(UserDefaults(suiteName: store.suiteName!)!)[key] == 42)
    withExtendedLifetime(token) {}
  }

  @Test func largeValuesRoundTripAndAreObserved() throws {
    let (store, _) = makeStore()
    defer { removeSuiteFile(store.suiteName!) }
    let blob = DefaultsKey<Data>("blob", default: Data())
    let list = DefaultsKey<[Int]>("list", default: [])
    let bytes = Data((0..<10_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    let numbers = Array(0..<100_000)
    let seenBlob = Recorder<Int>()
    let seenList = Recorder<Int>()
    let tokens = [
      store.property(blob).observe(initial: false) { seenBlob.append($0.count) },
      store.property(list).observe(initial: false) { seenList.append($0.count) },
    ]
    // Apple platforms but macOS refuse a domain this large (iOS at 4 MiB, tvOS at 1 MB): the library refuses the
    // write first, with the stored value kept (SizeLimitTests).
    if let limit = DomainSizeBudget.platform {
      #expect(throws: DefaultsError.self) { try store.set(bytes, for: blob) }
      #expect(store[blob].isEmpty && seenBlob.values.isEmpty && limit.refusedAt < bytes.count)
      withExtendedLifetime(tokens) {}
      return
    }
    store[blob] = bytes
    store[list] = numbers
    #expect(seenBlob.values == [10_000_000])
    #expect(seenList.values == [100_000])
    store.flush()
    let fresh = DefaultsStore(UserDefaults(suiteName: store.suiteName!)!)
    #expect(fresh[blob] == bytes)
    #expect(fresh[list] == numbers)
    withExtendedLifetime(tokens) {}
  }

  @Test func deeplyNestedDictionariesRoundTrip() throws {
    let (store, _) = makeStore()
    defer { removeSuiteFile(store.suiteName!) }
    var building = PropertyListValue.string("bottom")
    for level in 0..<200 {
      building = .dictionary([PropertyListKey("level\(level)"): building, "n": .integer(Int128(level))])
    }
    let nested = building
    let key = DefaultsKey<PropertyListValue?>("nested")
    let seen = Recorder<Bool>()
    let token = store.property(key).observe(initial: false) { seen.append($0 == nested) }
    store[key] = nested
    #expect(seen.values == [true])
    store.flush()
    #expect(DefaultsStore(UserDefaults(suiteName: store.suiteName!)!)[key] == nested)
    withExtendedLifetime(token) {}
  }
}
