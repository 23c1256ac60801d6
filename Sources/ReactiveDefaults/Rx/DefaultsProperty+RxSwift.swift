#if RxSwift
  public import RxSwift

  /// Under the `RxSwift` trait a property is an RxSwift observable sequence: its current value first, then each
  /// distinct change, never an error.
  ///
  /// ```swift
  /// store.property(.volume).asObservable()
  ///   .subscribe(onNext: { print("volume", $0) })
  ///   .disposed(by: bag)
  /// ```
  extension DefaultsProperty: ObservableConvertibleType {
    /// The property's value type.
    public typealias Element = Value

    /// The current value, then each distinct change; disposing the subscription ends the observation.
    ///
    /// - Returns: A sequence that never errors and never completes: it ends when the subscription is disposed.
    public func asObservable() -> Observable<Value> {
      let property = self
      return Observable.create { observer in
        let sink = SerialObserver(observer)
        let token = property.observe { sink.observer.onNext($0) }
        return Disposables.create { token.cancel() }
      }
    }
  }

  /// An RxSwift observer handed to a property's handler. RxSwift's observers are not marked `Sendable`, but what
  /// they require is serial delivery, and a property calls each handler from one thread at a time.
  struct SerialObserver<Element>: @unchecked Sendable {
    let observer: AnyObserver<Element>
    init(_ observer: AnyObserver<Element>) { self.observer = observer }
  }

  /// Under the `RxSwift` trait a property is also an observer: `bind(to:)` and `subscribe` write into it, the
  /// "Observable and Observer at once" of RxCocoa's `ControlProperty`.
  ///
  /// ```swift
  /// slider.value.bind(to: store.property(.volume)).disposed(by: bag)
  /// ```
  extension DefaultsProperty: ObserverType {
    /// Writes each element; errors and completion end nothing (a setting has no end), like RxCocoa's `Binder`.
    ///
    /// - Parameter event: The event to handle.
    public func on(_ event: Event<Value>) {
      if case .next(let newValue) = event { value = newValue }
    }

    /// The property as a type-erased observer, a `Binder`-style sink.
    ///
    /// - Returns: An observer that writes each element into the property.
    public func asObserver() -> AnyObserver<Value> {
      AnyObserver(eventHandler: on)
    }
  }
#endif
