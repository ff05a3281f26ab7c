//! The real model (all-MiniLM-L6-v2 from `scripts/embedding-model-setup.sh`,
//! found through `BOTCRAFT_EMBEDDING_MODEL`) against reference token ids from
//! Hugging Face's `tokenizers` and vectors from an independent numpy BERT
//! (`tests/reference.py`).

use embedding::{Embedder, EmbeddingError};
use pretty_assertions::assert_eq;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    text: String,
    ids: Vec<u32>,
    vector: Vec<f32>,
}

fn references() -> Vec<Reference> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture JSON")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn vectors_match_an_independent_implementation() {
    let embedder = Embedder::load(&test_skip::need!(test_skip::needs::embedding_model()))
        .expect("model loads");
    assert_eq!(embedder.dimensions(), 384);
    let refs = references();
    let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).collect();
    let vectors = embedder.embed(&texts).expect("embed");
    for (reference, vector) in refs.iter().zip(&vectors) {
        let similarity = cosine(&reference.vector, vector);
        assert!(
            similarity > 0.9999,
            "{:?}: cosine {similarity} to the reference",
            reference.text
        );
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    // Batching and padding do not change a text's vector.
    let alone = embedder.embed(&texts[1..2]).expect("embed one");
    assert!(cosine(&alone[0], &vectors[1]) > 0.99999);
}

#[test]
fn embedding_reports_its_progress_batch_by_batch() {
    let embedder = Embedder::load(&test_skip::need!(test_skip::needs::embedding_model()))
        .expect("model loads");
    let texts: Vec<String> = (0..37)
        .map(|i| format!("tool number {i} reads files"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut seen = Vec::new();
    let vectors = embedder
        .embed_reporting(&refs, &mut |done| seen.push(done))
        .expect("embed");
    assert_eq!(vectors.len(), 37);
    // Batches of 8 (run on several threads, so they may finish in any order): after
    // each, how many texts are done; the last says all of them.
    let mut steps: Vec<usize> = std::iter::once(0)
        .chain(seen.iter().copied())
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| w[1] - w[0])
        .collect();
    steps.sort_unstable();
    assert_eq!(steps, vec![5, 8, 8, 8, 8]);
    assert_eq!(seen.last(), Some(&37));
    assert_eq!(vectors, embedder.embed(&refs).expect("embed"));
    // Each text's vector is the one it gets alone, whatever batch it ran in.
    for (text, vector) in refs.iter().zip(&vectors).step_by(7) {
        let alone = embedder.embed(&[text]).expect("embed one");
        assert!(cosine(&alone[0], vector) > 0.99999, "{text}");
    }
}

#[test]
fn token_ids_match_hugging_face_tokenizers() {
    let dir = test_skip::need!(test_skip::needs::embedding_model());
    let json = std::fs::read_to_string(dir.join("tokenizer.json")).expect("tokenizer.json");
    let tokenizer = embedding::WordPiece::from_json(&json).expect("tokenizer");
    for reference in references() {
        assert_eq!(
            tokenizer.encode(&reference.text, 256),
            reference.ids,
            "{:?}",
            reference.text
        );
    }
}

#[test]
fn similar_texts_are_closer_than_unrelated_ones() {
    let embedder = Embedder::load(&test_skip::need!(test_skip::needs::embedding_model()))
        .expect("model loads");
    let v = embedder
        .embed(&[
            "delete a file permanently",
            "remove a document from disk",
            "take a screenshot of the web page",
        ])
        .expect("embed");
    assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.2);
}

#[test]
fn a_broken_folder_names_the_file() {
    let dir = test_skip::need!(test_skip::needs::embedding_model());
    let broken = tempfile::tempdir().expect("tempdir");
    // (the file left out, the files linked in)
    let cases = [
        ("model.safetensors", ["config.json", "tokenizer.json"]),
        ("tokenizer.json", ["config.json", "model.safetensors"]),
        ("config.json", ["tokenizer.json", "model.safetensors"]),
    ];
    for (missing, present) in cases {
        let dst = broken.path().join(missing);
        std::fs::create_dir_all(&dst).expect("mkdir");
        for file in present {
            std::os::unix::fs::symlink(dir.join(file), dst.join(file)).expect("link");
        }
        match Embedder::load(&dst) {
            Err(EmbeddingError::MissingFile(path)) => assert_eq!(path, dst.join(missing)),
            other => panic!("{missing}: {other:?}"),
        }
    }
    // Present but corrupt: a clear error naming the file.
    let corrupt = broken.path().join("corrupt");
    std::fs::create_dir_all(&corrupt).expect("mkdir");
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(dir.join(file), corrupt.join(file)).expect("copy");
    }
    std::fs::write(corrupt.join("model.safetensors"), b"not weights").expect("write");
    match Embedder::load(&corrupt) {
        Err(EmbeddingError::BadFile { path, .. }) => {
            assert_eq!(path, corrupt.join("model.safetensors"))
        }
        other => panic!("corrupt weights: {other:?}"),
    }
    assert!(matches!(
        Embedder::load(&broken.path().join("nowhere")),
        Err(EmbeddingError::NotAFolder(_))
    ));
}
