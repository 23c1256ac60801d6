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

  /// The changes a platform has: on Apple platforms the preferences daemon reads and writes a suite's file.
  static var changes: [Change] {
    #if os(Linux)
      Change.allCases
    #else
      [.write, .plainUserDefaults]
    #endif
  }

  @Test(arguments: changes)
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

  /// A stored value written otherwise than the one kept, though `==` calls them equal (a string in its other Unicode
  /// normalization, 0.0 and -0.0 in a collection), is decoded again: the read gives what is stored.
  @Test func aStoredValueEqualButWrittenOtherwiseIsDecodedAgain() throws {
    let store = DefaultsStore.inMemory()
    let names = DefaultsKey<[String]>("names", default: [])
    store[names] = ["Zo\u{EB}"]
    #expect(store[names].map { Array($0.utf8) } == [Array("Zo\u{EB}".utf8)])
    store[names] = ["Zoe\u{308}"]
    #expect(store[names].map { Array($0.utf8) } == [Array("Zoe\u{308}".utf8)])
    let reals = DefaultsKey<[Double]>("reals", default: [])
    store[reals] = [0.0]
    #expect(store[reals].map(\.sign) == [.plus])
    store[reals] = [-0.0]
    #expect(store[reals].map(\.sign) == [.minus])
  }

  struct Holder: DefaultsCodable {
    var box: Box?
  }

  /// A value that holds a class instance anywhere (an optional one, a collection of them, a structure with one) is
  /// decoded at every read, as a class's is.
  @Test func aValueHoldingAClassInstanceIsDecodedAtEveryRead() throws {
    let store = DefaultsStore.inMemory()
    let optional = DefaultsKey<Box?>("optional", default: nil)
    let array = DefaultsKey<[Box]>("array", default: [])
    let holder = DefaultsKey<Holder>("holder", default: Holder())
    store[optional] = Box(columns: 1)
    store[array] = [Box(columns: 1)]
    store[holder] = Holder(box: Box(columns: 1))
    // Changed through what reads gave, never written back.
    let read = (store[optional], store[array], store[holder])
    read.0?.columns = 9
    read.1.first?.columns = 9
    read.2.box?.columns = 9
    #expect(store[optional]?.columns == 1)
    #expect(store[array].first?.columns == 1)
    #expect(store[holder].box?.columns == 1)
    #expect(DecodedValues.holdsAnInstance(Holder(box: nil)) == false)
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
