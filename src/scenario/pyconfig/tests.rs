//! Unit tests of the config language: property tests, literal_eval, statements.

mod props {
    use super::super::*;
    use proptest::prelude::*;

    /// Random expressions over the language's operators, builtins and extreme values.
    fn expr() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            Just("9223372036854775807".to_owned()),
            Just("(-9223372036854775807 - 1)".to_owned()),
            Just("99999999999999999999".to_owned()),
            Just("1e308".to_owned()),
            Just("float('nan')".to_owned()),
            Just("float('-inf')".to_owned()),
            Just("'ab'".to_owned()),
            Just("True".to_owned()),
            Just("None".to_owned()),
            Just("n_head".to_owned()),
            Just("undefined".to_owned()),
            Just("torch.cuda.is_bf16_supported()".to_owned()),
            Just("os.path.join('a', 'b')".to_owned()),
            (-70i64..70).prop_map(|i| i.to_string()),
            (-3.0f64..3.0).prop_map(|f| format!("{f:?}")),
        ];
        atom.prop_recursive(5, 48, 3, |inner| {
            let op = prop::sample::select(vec![
                "**", "//", "%", "*", "/", "+", "-", "<<", ">>", "&", "|", "^", "<", "==", "and",
                "or", "in",
            ]);
            let func = prop::sample::select(vec![
                "int", "float", "bool", "str", "min", "max", "abs", "round", "len", "-", "~",
                "not ",
            ]);
            prop_oneof![
                (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
                (func, inner.clone()).prop_map(|(f, a)| match f {
                    "-" | "~" | "not " => format!("{f}{a}"),
                    _ => format!("{f}({a})"),
                }),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, c, b)| format!("({a} if {c} else {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}, {b})[{b}]")),
                (inner.clone(), inner).prop_map(|(a, b)| format!("max({a}, {b})")),
            ]
        })
    }

    /// Config-file text made of Python's pieces, in random order.
    fn config_text() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "\n",
            "    ",
            "\t",
            "n_layer",
            "x",
            " = ",
            "=",
            "+=",
            "**",
            "//",
            "%",
            "-",
            "1",
            "9223372036854775807",
            "(",
            ")",
            "[",
            "]",
            "{",
            ",",
            ":",
            ";",
            "'",
            "\"\"\"",
            "\\\n",
            "if ",
            "elif ",
            "else",
            "def ",
            "for ",
            " in ",
            "with ",
            "import ",
            "from ",
            "print",
            "#",
            "f'",
            "\u{feff}",
            "é",
            "True",
            "not ",
            " if ",
            " else ",
            ".",
            "torch",
            "lambda",
        ]);
        prop::collection::vec(piece, 0..80).prop_map(|v| v.concat())
    }

    /// Runs `text` as a file and checks any error is located; also as `--set` and an override.
    fn check(text: &str) -> Result<(), TestCaseError> {
        let catalog = GpuCatalog::builtin();
        let mut s = Session::new(&catalog, None);
        if let Err(d) = s.run_file(Path::new("p.py"), text) {
            prop_assert!(
                d.file.is_some() && d.line.is_some() && d.column.is_some(),
                "{d:?}"
            );
        }
        let _ = s.eval_str("batch_size", text);
        if let Err(d) = s.apply_override(&format!("--n_layer={text}")) {
            prop_assert!(d.message.starts_with("--n_layer="), "{d:?}");
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn expressions_never_panic_and_errors_are_located(e in expr()) {
            check(&format!("x = 1\nn_layer = {e}\nhelper = {e}\nif {e}:\n    n_head = {e}\n"))?;
            check(&e)?;
        }

        #[test]
        fn config_text_never_panics_and_errors_are_located(text in config_text()) {
            check(&text)?;
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            check(&text)?;
        }
    }

    #[test]
    fn literal_eval_is_configurators() {
        assert_eq!(literal_eval("8"), Some(PyValue::Int(8)));
        assert_eq!(literal_eval("-1e-3"), Some(PyValue::Float(-1e-3)));
        assert_eq!(literal_eval("'x'"), Some(PyValue::Str("x".into())));
        assert_eq!(
            literal_eval("(1, [2])"),
            Some(PyValue::Tuple(vec![
                PyValue::Int(1),
                PyValue::List(vec![PyValue::Int(2)])
            ]))
        );
        assert_eq!(
            literal_eval("-9223372036854775808"),
            Some(PyValue::Int(i64::MIN))
        );
        for not_literal in ["float16", "4*2", "1 + 2", "n_head", "f(1)", "1 2"] {
            assert_eq!(literal_eval(not_literal), None, "{not_literal}");
        }
        assert!(literal_value("99999999999999999999").is_err());
    }
}

mod statements {
    use super::super::*;

    /// Runs `text` and returns the session.
    fn run(text: &str) -> Session<'static> {
        static CATALOG: std::sync::OnceLock<GpuCatalog> = std::sync::OnceLock::new();
        let catalog = CATALOG.get_or_init(GpuCatalog::builtin);
        let mut s = Session::new(catalog, Some("t4"));
        s.run_file(Path::new("c.py"), text).expect("runs");
        s
    }

    fn get(s: &Session<'_>, name: &str) -> PyValue {
        match s.env.get(name) {
            Some(Binding::Known(v)) => v.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn each_statement_form() {
        let s = run("'''doc'''\na = 1; b = 2\nc = 1 + \\\n  2\nd = (1,\n  2)\na *= 10\ne: int = 5\nf: int\n\
                     g, (h, i) = 1, [2, 3]\nj = k = 7\nif a > 100:\n    m = 1\nelif a == 10: m = 2\nelse:\n    m = 3\n\
                     del k\nimport os.path\nfrom math import sqrt as root\n");
        assert_eq!(get(&s, "a"), PyValue::Int(10));
        assert_eq!(get(&s, "c"), PyValue::Int(3));
        assert_eq!(
            get(&s, "d"),
            PyValue::Tuple(vec![PyValue::Int(1), PyValue::Int(2)])
        );
        assert_eq!(get(&s, "e"), PyValue::Int(5));
        assert!(!s.env.contains_key("f") && !s.env.contains_key("k"));
        assert_eq!(
            (get(&s, "g"), get(&s, "i")),
            (PyValue::Int(1), PyValue::Int(3))
        );
        assert_eq!(get(&s, "j"), PyValue::Int(7));
        assert_eq!(get(&s, "m"), PyValue::Int(2));
        assert_eq!(get(&s, "os"), PyValue::Module("os".into()));
        assert_eq!(get(&s, "root"), PyValue::Module("math.sqrt".into()));
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn skipped_statements_leave_notes_and_unknown_names() {
        let s = run(
            "print('hi')\ntorch._dynamo.config.x = True\ndef f():\n    n_layer = 1\n\
                     with open('x') as fh:\n    y = 1\nz = {'a': 1}\nif f():\n    w = 2\n",
        );
        assert_eq!(s.notes.len(), 6, "{:?}", s.notes);
        for name in ["f", "fh", "y", "z", "w"] {
            assert!(
                matches!(s.env.get(name), Some(Binding::Unknown(_))),
                "{name}"
            );
        }
        assert!(
            !s.origins.contains_key("n_layer"),
            "a def's body is its own scope"
        );
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_stack_overflow() {
        let catalog = GpuCatalog::builtin();
        let deep = |open: &str, close: &str| {
            format!("n_layer = {}1{}\n", open.repeat(5000), close.repeat(5000))
        };
        let mut blocks = String::new();
        for depth in 0..300 {
            blocks += &format!("{}if True:\n", " ".repeat(depth));
        }
        blocks += &format!("{}n_layer = 1\n", " ".repeat(300));
        let cases = [
            deep("(", ")"),
            deep("[", "]"),
            deep("-", ""),
            deep("not ", ""),
            deep("2 ** ", ""),
            deep("int(", ")"),
            deep("1 if True else ", ""),
            blocks,
        ];
        // Half the stack of a test thread, for a margin in debug builds.
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                for text in cases {
                    let mut s = Session::new(&catalog, None);
                    let d = s.run_file(Path::new("c.py"), &text).unwrap_err();
                    assert!(d.line.is_some(), "{}", d.message);
                }
            })
            .expect("thread")
            .join()
            .expect("no stack overflow");
    }

    #[test]
    fn train_py_stops_at_the_configurator() {
        let s = run("n_layer = 3\nexec(open('configurator.py').read())\nn_layer = 4\nfor i in x: n_layer = i\n");
        assert_eq!(get(&s, "n_layer"), PyValue::Int(3));
    }

    #[test]
    fn keys_that_cannot_be_evaluated_are_errors() {
        let catalog = GpuCatalog::builtin();
        for (text, at) in [
            ("n_layer = time.time()\n", (1, 11)),
            ("x = 1\nif os.getcwd():\n    batch_size = 2\n", (2, 4)),
            ("while False:\n    dtype = 'float16'\n", (1, 1)),
            ("a, n_head = 1, {}\n", (1, 1)),
            ("n_layer = len\n", (1, 11)),
        ] {
            let mut s = Session::new(&catalog, None);
            let d = s.run_file(Path::new("c.py"), text).unwrap_err();
            assert_eq!(
                (d.line, d.column),
                (Some(at.0), Some(at.1)),
                "{text}: {}",
                d.message
            );
        }
    }
}

mod chains {
    use super::super::*;

    /// Operators of several precedence levels in one flat chain give Python's values (each
    /// figure is what CPython 3.11 prints for the same expression).
    #[test]
    fn flat_chains_keep_pythons_precedence_and_associativity() {
        let catalog = GpuCatalog::builtin();
        let s = Session::new(&catalog, None);
        for (src, want) in [
            ("1 + 2 * 3 - 4 * 5 // 3 + 7 % 4", Literal::Int(4)),
            ("2 * 3 + 4 << 1 | 1 ^ 3 & 6", Literal::Int(23)),
            ("100 - 10 - 5 - 1", Literal::Int(84)),
            ("16 // 2 // 2 * 3 % 5", Literal::Int(2)),
            ("1 | 2 ^ 3 & 4 << 1 >> 1 + 1 - 1 * 2 // 1", Literal::Int(3)),
            ("2 ** 3 ** 2", Literal::Int(512)),
            ("-2 ** 2", Literal::Int(-4)),
            ("0 or 0 or 5 and 0 or 7", Literal::Int(7)),
            ("1 and 2 and 3 or 4", Literal::Int(3)),
            ("(3 and 0) or (0 and 9)", Literal::Int(0)),
            ("1 < 2 < 3 > 2 == 2", Literal::Bool(true)),
            ("len('abc'[1][0][0])", Literal::Int(1)),
        ] {
            assert_eq!(s.eval_str("n_layer", src), Ok(Some(want)), "{src}");
        }
    }
}
