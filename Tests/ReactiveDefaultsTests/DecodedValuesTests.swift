import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

/// A stored value decoded once is not decoded again while it stays the stored value (``DecodedValues``), and whatever
/// changes it is seen at the next read: a write of this store, plain `UserDefaults` in this process, another
/// process's save. Values of class types are decoded at every read; the kept values are bounded.
@Suite(.serialized) struct DecodedValuesTests {
  /// How many times ``Layout`` was decoded (the suite's tests run one at a time).
  static let decodes = Atomic<Int>(0)

  struct Layout: DefaultsCodable, Equatable {
    var columns: Int

    init(columns: Int) { self.columns = columns }

    init(from decoder: any Decoder) throws {
      DecodedValuesTests.decodes.add(1, ordering: .relaxed)
      columns = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .columns)
    }
  }

  final class Box: DefaultsCodable, @unchecked Sendable {
    var columns: Int

    init(columns: Int) { self.columns = columns }

    init(from decoder: any Decoder) throws {
      DecodedValuesTests.decodes.add(1, ordering: .relaxed)
      columns = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .columns)
    }

    private enum CodingKeys: CodingKey { case columns }

    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: CodingKeys.self)
      try container.encode(columns, forKey: .columns)
    }
  }

  private static let layout = DefaultsKey<Layout>("layout", default: Layout(columns: 0))

  private var decodes: Int { Self.decodes.load(ordering: .relaxed) }

  @Test func aStoredValueIsDecodedOnceForEveryRead() throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    store[Self.layout] = Layout(columns: 3)
    let before = decodes
    for _ in 0..<100 { #expect(store[Self.layout] == Layout(columns: 3)) }
    #expect(decodes - before == 1)
  }

  /// Each way the stored value can change is seen by the next read, decoded anew.
  enum Change: String, CaseIterable, Sendable {
    case write, plainUserDefaults, anotherProcess
  }

  @Test(arguments: Change.allCases)
  func aChangedStoredValueIsDecodedAgain(_ change: Change) async throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    store[Self.layout] = Layout(columns: 3)
    try store.save()
    #expect(store[Self.layout] == Layout(columns: 3))
    let json = #"{"columns":5}"#
    switch change {
    case .write: store[Self.layout] = Layout(columns: 5)
    case .plainUserDefaults: store.userDefaults.set(json, forKey: "layout")
    case .anotherProcess:
      // Another process's save: a new file renamed over the suite's, as the library's saves are.
      let path = try #require(store.hub.persistence?.file.path)
      try SuiteFile.encode(["layout": .string(json)]).write(to: URL(fileURLWithPath: path), options: .atomic)
      store.refresh()
    }
    let before = decodes
    #expect(store[Self.layout] == Layout(columns: 5))
    #expect(decodes - before == 1)
  }

  /// An instance of a class could be changed by whoever was given it: each read decodes a new one.
  @Test func aValueOfAClassTypeIsDecodedAtEveryRead() throws {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    let key = DefaultsKey<Box>("box", default: Box(columns: 0))
    store[key] = Box(columns: 2)
    let first = store[key]
    first.columns = 9
    let before = decodes
    #expect(store[key].columns == 2)
    #expect(store[key].columns == 2)
    #expect(decodes - before == 2)
  }

  /// At most ``DecodedValues/capacity`` keys are kept per suite.
  @Test func theKeptValuesAreBounded() throws {
    let store = DefaultsStore.inMemory()
    for index in 0..<(DecodedValues.capacity + 50) {
      let key = DefaultsKey<Layout>("layout\(index)", default: Layout(columns: 0))
      store[key] = Layout(columns: index)
      #expect(store[key] == Layout(columns: index))
    }
    #expect(store.hub.decodedValues.count <= DecodedValues.capacity)
  }
}
