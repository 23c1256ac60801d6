import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct LifetimeTests {
  @Test func aTokenOutlivesItsStoreAndPropertyAndKeepsDelivering() {
    let name = makeSuiteName()
    let seen = Recorder<Int>()
    weak var weakStore: DefaultsStore?
    var token: DefaultsObservation?
    do {
      let store = DefaultsStore(suiteName: name)!
      weakStore = store
      token = store.property(.count).observe { seen.append($0) }
    }
    #expect(weakStore == nil, "an observation does not keep its store alive")
    DefaultsStore(suiteName: name)![.count] = 3
    #expect(seen.values == [0, 3], "but it keeps delivering while the token lives")
    #expect(token?.isCancelled == false)
    token = nil
    DefaultsStore(suiteName: name)![.count] = 4
    #expect(seen.values == [0, 3])
  }

  @Test func aPropertyKeepsItsStoreAliveAndNothingElseDoes() {
    weak var weakStore: DefaultsStore?
    weak var weakHub: ChangeHub?
    var property: DefaultsProperty<Int>?
    do {
      let store = makeStore().0
      weakStore = store
      weakHub = store.hub
      property = store.property(.count)
    }
    #expect(weakStore != nil)
    _ = property?.value  // starts the property's own Observation subscription
    property = nil
    #expect(weakStore == nil)
    #expect(weakHub == nil, "no cycle keeps the suite's hub alive")
  }

  @Test func noCycleSurvivesObservingBindingAndStreaming() async {
    weak var weakFirst: DefaultsStore?
    weak var weakSecond: DefaultsStore?
    weak var weakHub: ChangeHub?
    do {
      let first = makeStore().0
      let second = makeStore().0
      weakFirst = first
      weakSecond = second
      weakHub = first.hub
      let a = first.property(.volume)
      let b = second.property(.volume)
      let link = a.bind(to: b)
      let token = a.observe { _ in _ = a.value }  // a handler that captures its own property
      var iterator = b.values.makeAsyncIterator()
      _ = await iterator.next()
      a.value = 0.9
      link.cancel()
      token.cancel()
    }
    // A delivery already under way on another thread (the binding's write, the stream's) may hold a store until it
    // returns: a cycle never lets go, so the bound is only how long that may take on a loaded machine.
    let deadline = ContinuousClock.now + .seconds(10 * timeoutScale)
    while weakFirst != nil || weakSecond != nil || weakHub != nil, ContinuousClock.now < deadline { await Task.yield() }
    #expect(weakFirst == nil)
    #expect(weakSecond == nil)
    #expect(weakHub == nil)
  }

  @Test func aStreamOutlivesItsStore() async {
    let name = makeSuiteName()
    weak var weakStore: DefaultsStore?
    var iterator: AsyncStream<Int>.Iterator
    do {
      let store = DefaultsStore(suiteName: name)!
      weakStore = store
      iterator = store.property(.count).values.makeAsyncIterator()
    }
    #expect(weakStore == nil)
    #expect(await iterator.next() == 0)
    DefaultsStore(suiteName: name)![.count] = 8
    #expect(await iterator.next() == 8)
  }
}
