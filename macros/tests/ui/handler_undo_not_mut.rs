use openharness::prelude::*;

#[event]
#[derive(Debug, Clone)]
pub struct TaskAdded {
    pub title: String,
}

#[event]
pub enum TodoEvent {
    TaskAdded,
}

#[derive(Debug, Clone, Default)]
pub struct Todo {
    pub tasks: Vec<String>,
}

#[handler(TodoEvent)]
impl Todo {
    fn add(&mut self, task: &TaskAdded, undo: &Undo<Self>) {
        self.tasks.push(task.title.clone());
        let _ = undo;
    }
}

fn main() {}
